//! The Model Context Protocol: [`client`] connects to the external MCP
//! servers named in `[mcp_servers]` and offers their tools in the catalog.

pub mod client;
