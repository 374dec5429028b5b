// webpage: example toolhost plugin in JavaScript that uses the network. It
// fetches a web page through the host's granted `wasi:http` and returns its
// title and links, resolved to absolute URLs, so that a model can follow them.
//
//   page_links   the title and the links of an HTML page
//
// It reaches only the hosts its operator grants in toolhost.toml
// (`[plugins.webpage] http = [...]`); webpage.toml beside it says what it
// asks for. Built by plugins/js/build.sh with componentize-js, with `http`
// enabled because of that manifest: `fetch()` is StarlingMonkey's, over
// `wasi:http/outgoing-handler`, and `callTool` may be async.

import { log } from 'toolhost:plugin/log@0.1.0';

const invalid = (message) => ({ tag: 'invalid-arguments', val: message });
const failed = (message) => ({ tag: 'failed', val: message });

const ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

/** Decodes the HTML entities that show up in link texts and titles. */
function decodeEntities(text) {
  return text.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (whole, name) => {
    if (name[0] === '#') {
      const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[name.toLowerCase()] ?? whole;
  });
}

/** Visible text of an HTML fragment, on one line. */
function textOf(html) {
  return decodeEntities(html.replace(/<[^>]*>/g, ' ')).replace(/\s+/g, ' ').trim();
}

async function pageLinks({ url, max_links: maxLinks = 100, same_site: sameSite = false }) {
  let target;
  try {
    target = new URL(url);
  } catch {
    throw invalid(`\`url\` ${JSON.stringify(url)} is not an absolute URL; give one such as https://example.com/`);
  }
  if (target.protocol !== 'https:' && target.protocol !== 'http:') {
    throw invalid(`\`url\` must be an http or https URL, not ${target.protocol}`);
  }
  let response;
  try {
    response = await fetch(target.href);
  } catch (err) {
    // A host the operator did not grant is refused before anything is sent,
    // and the call's report names it.
    throw failed(
      `could not fetch ${target.href}: ${err?.message ?? err} (if ${target.host} should be reachable, ` +
        'grant it in toolhost.toml under [plugins.webpage] http = [...])',
    );
  }
  if (!response.ok) {
    throw failed(`${target.href} answered ${response.status} ${response.statusText}`.trim());
  }
  const html = await response.text();
  const base = response.url || target.href;
  const title = textOf(/<title[^>]*>([\s\S]*?)<\/title>/i.exec(html)?.[1] ?? '');
  const links = [];
  const seen = new Set();
  const anchor = /<a\b[^>]*?\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))[^>]*>([\s\S]*?)<\/a>/gi;
  for (let match; (match = anchor.exec(html)) && links.length < maxLinks; ) {
    let href;
    try {
      href = new URL(decodeEntities(match[1] ?? match[2] ?? match[3]), base);
    } catch {
      continue;
    }
    if (href.protocol !== 'https:' && href.protocol !== 'http:') continue;
    if (sameSite && href.host !== new URL(base).host) continue;
    href.hash = '';
    if (seen.has(href.href)) continue;
    seen.add(href.href);
    links.push({ text: textOf(match[4]), href: href.href });
  }
  log('debug', 'read a page', [
    { key: 'url', value: base },
    { key: 'links', value: String(links.length) },
  ]);
  return { url: base, status: response.status, title, links };
}

const TOOLS = {
  page_links: {
    run: pageLinks,
    description:
      'Fetches a web page (http or https) and returns JSON {"url", "status", "title", "links": [{"text", ' +
      '"href"}]}: its title and the links on it, resolved to absolute URLs, without fragments or duplicates, ' +
      'in page order. Only hosts the operator granted can be reached; others fail with a message naming the ' +
      'host. Example: {"url": "https://example.com/", "max_links": 20, "same_site": true}.',
    schema: {
      type: 'object',
      additionalProperties: false,
      required: ['url'],
      properties: {
        url: { type: 'string', description: 'The page to read, e.g. https://example.com/docs/.' },
        max_links: { type: 'integer', minimum: 1, maximum: 1000, description: 'At most this many links (default 100).' },
        same_site: { type: 'boolean', description: 'Only links to the same host as the page (default false).' },
      },
    },
  },
};

export const tools = {
  listTools() {
    return Object.entries(TOOLS).map(([name, tool]) => ({
      name,
      description: tool.description,
      inputSchema: JSON.stringify(tool.schema),
    }));
  },

  async callTool(name, argumentsJson) {
    const tool = TOOLS[name];
    if (!tool) throw failed(`this plugin has no tool named \`${name}\``);
    const result = await tool.run(JSON.parse(argumentsJson));
    return { tag: 'json', val: JSON.stringify(result) };
  },
};
