// __NAME__: a toolhost plugin in JavaScript. Build it with ./build.sh, which
// writes __NAME__.wasm; copy that file into toolhost's plugins folder.
//
// componentize-js runs this module in an embedded JavaScript engine. The
// exported `tools` object implements the `tools` interface of
// wit/plugin.wit: `listTools` says which tools there are (name, description,
// JSON Schema of the arguments) and `callTool` runs one. Throwing
// `{ tag: 'invalid-arguments' | 'failed', val: message }` returns the
// contract's call-error; any other exception traps, and `toolhost -vv call`
// shows what it printed. `fetch()` works when __NAME__.toml asks for `http`
// (build.sh then keeps wasi:http) and the operator grants the host under
// [plugins.__NAME__] http in toolhost.toml.

import { log } from 'toolhost:plugin/log@0.1.0';

/** The arguments were wrong: the model can fix them and call again. */
const invalid = (message) => ({ tag: 'invalid-arguments', val: message });
/** The arguments were fine but the tool could not do its job. */
const failed = (message) => ({ tag: 'failed', val: message });

function count({ text }) {
  if (text === '') throw invalid('`text` is empty: give the text to count');
  const counts = { words: text.split(/\s+/).filter(Boolean).length, characters: [...text].length };
  log('debug', 'counted', [{ key: 'words', value: String(counts.words) }]);
  return counts;
}

// name -> run, description for the model, JSON Schema of the arguments
const TOOLS = {
  '__NAME__': {
    run: count,
    description: 'Counts the words and characters of a text. Returns JSON {"words", "characters"}.',
    schema: {
      type: 'object',
      required: ['text'],
      properties: { text: { type: 'string', description: 'The text to count.' } },
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

  // async, so that a tool may be too (one that awaits fetch(), say).
  async callTool(name, argumentsJson) {
    const tool = TOOLS[name];
    if (!tool) throw failed(`this plugin has no tool named \`${name}\``);
    // The host has already checked the arguments against the tool's schema.
    const result = await tool.run(JSON.parse(argumentsJson));
    return { tag: 'json', val: JSON.stringify(result) };
  },
};
