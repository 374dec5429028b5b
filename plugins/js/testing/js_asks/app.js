// js_asks: what a running call may do through the JavaScript helper
// (sdk/js/toolhost.js, copied beside this file at build time), for the tests:
// a form, a sampling request, the client's roots, a keyed batch of them, and
// a result of every kind of block. Its tools answer exactly as sdk_asks (the
// Rust SDK's) do, so one test checks both (tests/all/contract_v0_2.rs).

import * as th from './toolhost.js';

export { tools } from './toolhost.js';

const NOTHING = { type: 'object', properties: {} };
const PERSON = {
  type: 'object',
  properties: {
    username: { type: 'string', description: 'Your user name.' },
    color: { type: 'string', enum: ['blue', 'red'], description: 'Your favourite colour.' },
    ok: { type: 'boolean', description: 'Is all this fine?' },
    nickname: { type: 'string', description: 'A nickname, if you have one.' },
  },
  required: ['username', 'color', 'ok'],
};
// The smallest PNG: one transparent pixel.
const PIXEL = [
  0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
  0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49,
  0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00,
  0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

const said = (person) =>
  `${person.username} likes ${person.color[0].toUpperCase()}${person.color.slice(1)} ` +
  `(ok: ${person.ok ? 'true' : 'false'}, nickname: ${person.nickname || 'none'})`;

th.tool({ name: 'js_elicit', description: 'Asks the user who they are, with a form.', inputSchema: NOTHING }, () => {
  th.progress(0, 1, 'asking');
  const answer = th.elicit('Who are you?', PERSON);
  return answer.accepted ? `accepted: ${said(answer.answers)}` : answer.action;
});

th.tool(
  {
    name: 'js_sample',
    description: "Asks the client's model to answer a prompt.",
    inputSchema: {
      type: 'object',
      properties: { prompt: { type: 'string', description: 'What to ask the model.' } },
      required: ['prompt'],
    },
  },
  ({ prompt }) => {
    const reply = th.sample(prompt, { system: 'Be brief.', maxTokens: 100 });
    return `${reply.model} said: ${reply.text} (${reply.stopReason ?? '?'})`;
  },
);

th.tool({ name: 'js_roots', description: "Lists the client's roots.", inputSchema: NOTHING }, () => {
  return 'roots: ' + th.roots().map((root) => `${root.uri} (${root.name ?? '-'})`).join(', ');
});

th.tool({ name: 'js_batch', description: 'Asks the user and reads the roots in one batch.', inputSchema: NOTHING }, () => {
  const answers = th.ask({ who: th.askElicit('Who are you, again?', PERSON), where: th.askRoots() });
  return Object.entries(answers)
    .map(([key, answer]) => {
      if (answer instanceof th.RequestError) {
        if (answer.kind !== 'unsupported') throw answer;
        return `unsupported: ${answer.detail}`;
      }
      if (key === 'who') return answer.accepted ? `who: ${said(answer.answers)}` : `who: ${answer.action}`;
      return `where: ${answer.length} roots`;
    })
    .join('\n');
});

th.tool(
  {
    name: 'js_media',
    title: 'Every kind of block',
    description: 'Returns one block of every kind.',
    inputSchema: NOTHING,
    hints: { readOnly: true },
  },
  () => [
    th.text('every kind'),
    th.image(PIXEL, 'image/png', { audience: 'user' }),
    th.link('test://notes/1', 'note-1'),
    th.embeddedText('test://notes/2', 'the second note', 'text/plain'),
    th.embeddedBlob('test://notes/3', [0, 1, 2], 'application/octet-stream'),
    th.json({ blocks: 7 }),
    th.text('important', { priority: 0.9 }),
  ],
);
