// __NAME__: a toolhost plugin in JavaScript. Build it with ./build.sh, which
// writes __NAME__.wasm; copy that file into toolhost's plugins folder.
//
// componentize-js runs this module in an embedded JavaScript engine against
// toolhost's contract 0.2.0 (wit/plugin.wit). toolhost.js (imported as `th`)
// is the helper: each th.tool(...) is a tool, and the `tools` object
// re-exported below is the export that lists and calls them.
//
// A tool returns content blocks (th.text, th.json, th.image, th.audio,
// th.link, th.embeddedText, th.embeddedBlob); while it runs it may report
// th.progress(...), ask the user (th.elicit), ask the model (th.sample) and
// read the client's roots (th.roots), each where the operator grants it under
// [plugins.__NAME__] in toolhost.toml. `fetch()` works when __NAME__.toml
// asks for `http` (build.sh then keeps wasi:http) and the operator grants the
// host under [plugins.__NAME__] http.

import * as th from './toolhost.js';

export { tools } from './toolhost.js';

th.tool(
  {
    name: '__NAME__',
    title: 'Count words',
    description: 'Counts the words and characters of a text. Returns JSON {"words", "characters"}.',
    inputSchema: {
      type: 'object',
      required: ['text'],
      properties: { text: { type: 'string', description: 'The text to count.' } },
    },
    outputSchema: {
      type: 'object',
      properties: { words: { type: 'integer' }, characters: { type: 'integer' } },
      required: ['words', 'characters'],
    },
    hints: { readOnly: true, idempotent: true },
  },
  // May be async (a tool that awaits fetch(), say).
  ({ text }) => {
    // The model can fix its arguments and call again. Throw th.Failed('why')
    // when the arguments were fine but the tool could not do its job.
    if (text === '') throw new th.InvalidArguments('`text` is empty: give the text to count');
    const words = text.split(/\s+/).filter(Boolean).length;
    const characters = [...text].length;
    th.progress(1, 1, 'counted');
    th.log.debug('counted', { words });
    // A text block for people and models, and the JSON block (the result's
    // structured content, checked against the output schema).
    return [th.text(`${words} words, ${characters} characters`), th.json({ words, characters })];
  },
);
