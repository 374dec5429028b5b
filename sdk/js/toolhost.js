// toolhost.js: toolhost's JavaScript helper for plugins on contract 0.2.0.
//
// A thin layer over the bindings componentize-js makes for wit/plugin.wit: a
// tool registry that implements the exported `tools` interface, content
// builders for a tool's result, typed errors, logging, and what a running call
// may ask of the host (progress, elicitation, sampling, roots).
//
//   import * as th from './toolhost.js';
//   export { tools } from './toolhost.js';   // the export componentize-js looks for
//
//   th.tool({
//     name: 'shout',
//     description: 'Upper-cases a text.',
//     inputSchema: { type: 'object', required: ['text'], properties: { text: { type: 'string' } } },
//     title: 'Shout',
//     hints: { readOnly: true },
//   }, async ({ text }) => {
//     if (text === '') throw new th.InvalidArguments('`text` is empty');
//     th.progress(1, 1, 'shouted');
//     return [th.text(text.toUpperCase()), th.json({ length: text.length })];
//   });
//
// A tool returns a block (th.text, th.json, th.image, th.audio, th.link,
// th.embeddedText, th.embeddedBlob), an array of them, a string (one text
// block) or a plain object (one JSON block). At most one JSON block per
// result: it is the result's structured content, checked against
// `outputSchema` when given.
//
// Requests to the host (th.elicit, th.elicitUrl, th.sample, th.roots, th.ask)
// are refused unless the operator grants them under [plugins.NAME] in
// toolhost.toml (`elicitation = true`, `sampling = true`, `roots = true`). A
// refused or failed request throws th.RequestError (`kind`: 'denied',
// 'unsupported', 'limit' or 'failed'); one the tool does not catch becomes
// the call's `failed` error. A client that answers statelessly calls the tool
// again with the answers, and it runs from the start: ask before changing
// anything, and ask the same questions each time.
//
// How componentize-js maps WIT: records are objects with camelCase fields,
// variants `{ tag, val }`, enums kebab-case strings, options `undefined` or
// the value, list<u8> a Uint8Array, u64 a BigInt, tuples arrays; a function
// returning `result` returns the ok value and throws the error.

import * as wit from 'toolhost:plugin/call@0.2.0';
import { log as witLog } from 'toolhost:plugin/log@0.2.0';

// ---- Errors -------------------------------------------------------------------

/** The arguments were wrong: the model can fix them and call again. */
export class InvalidArguments extends Error {}

/** The arguments were fine but the tool could not do its job. */
export class Failed extends Error {}

/**
 * The host did not answer a request: `kind` is 'denied' (not granted to the
 * plugin), 'unsupported' (the client or front end cannot), 'limit' (a budget
 * is used up) or 'failed'; `message` says more (`detail` without the kind).
 */
export class RequestError extends Error {
  constructor(kind, detail) {
    super(`${kind}: ${detail}`);
    this.kind = kind;
    this.detail = detail;
  }
}

// What an import that returns `result<_, request-error>` threw, as a RequestError.
function requestError(thrown) {
  const value = thrown && typeof thrown === 'object' && 'payload' in thrown ? thrown.payload : thrown;
  if (value && typeof value === 'object' && typeof value.tag === 'string') {
    return new RequestError(value.tag, String(value.val));
  }
  return null;
}

function asking(request) {
  try {
    return request();
  } catch (thrown) {
    throw requestError(thrown) ?? thrown;
  }
}

// ---- Content blocks -----------------------------------------------------------

const option = (value) => (value === null ? undefined : value);

function annotations({ audience, priority, lastModified } = {}) {
  if (audience === undefined && priority === undefined && lastModified === undefined) return undefined;
  return {
    audience: audience === undefined ? [] : [audience].flat(),
    priority: option(priority),
    lastModified: option(lastModified),
  };
}

const block = (content, hints) => ({ content, annotations: annotations(hints) });
const bytes = (data) => (data instanceof Uint8Array ? data : new Uint8Array(data));
const BLOCK = Symbol('toolhost block');
const mark = (made) => Object.defineProperty(made, BLOCK, { value: true });

/**
 * A text block. Each builder takes optional hints as its last argument:
 * `{ audience: 'user' | 'assistant' | [...], priority: 0..1, lastModified: ISO 8601 }`.
 */
export const text = (value, hints) => mark(block({ tag: 'text', val: String(value) }, hints));

/** The result's JSON block (its structured content): `value` is stringified. */
export const json = (value, hints) => mark(block({ tag: 'json', val: JSON.stringify(value) }, hints));

/** An image: its bytes (Uint8Array or array) and MIME type ('image/png', ...). */
export const image = (data, mimeType, hints) =>
  mark(block({ tag: 'image', val: { mimeType, data: bytes(data) } }, hints));

/** Audio: its bytes and MIME type ('audio/wav', ...). */
export const audio = (data, mimeType, hints) =>
  mark(block({ tag: 'audio', val: { mimeType, data: bytes(data) } }, hints));

/** A link to a resource: `{ title, description, mimeType, size }` are optional. */
export const link = (uri, name, { title, description, mimeType, size } = {}, hints) =>
  mark(
    block(
      {
        tag: 'resource-link',
        val: {
          uri,
          name,
          title: option(title),
          description: option(description),
          mimeType: option(mimeType),
          size: size === undefined || size === null ? undefined : BigInt(size),
        },
      },
      hints,
    ),
  );

/** An embedded resource holding text. */
export const embeddedText = (uri, value, mimeType, hints) =>
  mark(block({ tag: 'embedded', val: { uri, mimeType: option(mimeType), body: { tag: 'text', val: value } } }, hints));

/** An embedded resource holding bytes. */
export const embeddedBlob = (uri, data, mimeType, hints) =>
  mark(
    block({ tag: 'embedded', val: { uri, mimeType: option(mimeType), body: { tag: 'blob', val: bytes(data) } } }, hints),
  );

function blocks(result) {
  if (typeof result === 'string') return [text(result)];
  if (Array.isArray(result) && result.every((item) => item && item[BLOCK])) return result;
  if (result && result[BLOCK]) return [result];
  if (result && typeof result === 'object' && !Array.isArray(result)) return [json(result)];
  throw new TypeError(
    'a tool returns a block (th.text, th.json, ...), an array of blocks, a string or a plain object',
  );
}

// ---- Logging ------------------------------------------------------------------

function write(level, message, fields = {}) {
  witLog(level, message, Object.entries(fields).map(([key, value]) => ({ key, value: String(value) })));
}

/** Logging into the host's log: `log.debug('counted', { words: 3 })`. */
export const log = {
  trace: (message, fields) => write('trace', message, fields),
  debug: (message, fields) => write('debug', message, fields),
  info: (message, fields) => write('info', message, fields),
  warn: (message, fields) => write('warn', message, fields),
  error: (message, fields) => write('error', message, fields),
};

// ---- The tool registry --------------------------------------------------------

const TOOLS = new Map();
const schemaText = (schema) => (typeof schema === 'string' ? schema : JSON.stringify(schema));

/**
 * Registers `run(args)` (sync or async) as a tool: `name` (`^[a-zA-Z0-9_-]{1,64}$`),
 * `description` (for the model), `inputSchema` (a JSON Schema object whose
 * type is "object"), and optionally `title`, `outputSchema` and
 * `hints: { readOnly, destructive, idempotent, openWorld }`.
 */
export function tool({ name, description, inputSchema, title, outputSchema, hints = {} }, run) {
  if (TOOLS.has(name)) throw new Error(`two tools are named \`${name}\``);
  TOOLS.set(name, { name, description, inputSchema, title, outputSchema, hints, run });
  return run;
}

/** The exported `tools` interface: `export { tools } from './toolhost.js';` in app.js. */
export const tools = {
  listTools() {
    return [...TOOLS.values()].map((t) => ({
      name: t.name,
      title: option(t.title),
      description: t.description,
      inputSchema: schemaText(t.inputSchema),
      outputSchema: t.outputSchema === undefined ? undefined : schemaText(t.outputSchema),
      hints: {
        readOnly: option(t.hints.readOnly),
        destructive: option(t.hints.destructive),
        idempotent: option(t.hints.idempotent),
        openWorld: option(t.hints.openWorld),
      },
    }));
  },

  async callTool(name, argumentsJson) {
    const registered = TOOLS.get(name);
    if (!registered) throw { tag: 'failed', val: `this plugin has no tool named \`${name}\`` };
    // The host has already checked the arguments against the tool's schema.
    let result;
    try {
      result = await registered.run(JSON.parse(argumentsJson));
    } catch (err) {
      if (err instanceof InvalidArguments) throw { tag: 'invalid-arguments', val: err.message };
      if (err instanceof Failed || err instanceof RequestError) throw { tag: 'failed', val: err.message };
      // Any other exception traps; `toolhost -vv call` shows what it printed.
      throw err;
    }
    return blocks(result);
  },
};

// ---- What a call may ask ------------------------------------------------------

/** Reports progress: `done` out of `total` (when known), with a short message. */
export function progress(done, total, message) {
  wit.progress(Number(done), total === undefined || total === null ? undefined : Number(total), option(message));
}

function elicited(answer) {
  switch (answer.tag) {
    case 'accepted': {
      const answers = answer.val ? JSON.parse(answer.val) : {};
      if (!answers || typeof answers !== 'object' || Array.isArray(answers)) {
        throw new RequestError('failed', 'the host sent answers that are not a JSON object');
      }
      return { action: 'accepted', accepted: true, answers };
    }
    case 'declined':
      return { action: 'declined', accepted: false, answers: undefined };
    default:
      return { action: 'cancelled', accepted: false, answers: undefined };
  }
}

function sampled(reply) {
  return {
    text: reply.content.tag === 'text' ? reply.content.val : undefined,
    model: reply.model,
    stopReason: reply.stopReason,
    content: reply.content,
  };
}

const root = (r) => ({ uri: r.uri, name: r.name });

const form = (message, schema) => ({ tag: 'form', val: [message, schemaText(schema)] });
const page = (message, url) => ({ tag: 'url', val: [message, url] });

function samplingRequest(prompt, options = {}) {
  const {
    system, maxTokens = 1000, temperature, stop = [], modelHints = [],
    costPriority, speedPriority, intelligencePriority,
  } = options;
  const messages = (typeof prompt === 'string' ? [['user', prompt]] : prompt).map(([role, content]) => ({
    role,
    content: typeof content === 'string' ? { tag: 'text', val: content } : content[BLOCK] ? content.content : content,
  }));
  const preferred =
    modelHints.length > 0 || [costPriority, speedPriority, intelligencePriority].some((p) => p !== undefined);
  return {
    messages,
    systemPrompt: option(system),
    maxTokens,
    temperature: option(temperature),
    stopSequences: stop,
    preferences: preferred
      ? { hints: modelHints, costPriority, speedPriority, intelligencePriority }
      : undefined,
  };
}

/**
 * Asks the user to fill in a form: `schema` is the JSON Schema of a flat
 * object of strings, numbers, booleans and enums. Returns
 * `{ action: 'accepted' | 'declined' | 'cancelled', accepted, answers }`;
 * throws RequestError (e.g. 'denied' without `elicitation = true`).
 */
export const elicit = (message, schema) => elicited(asking(() => wit.elicit(form(message, schema))));

/** Asks the user to open `url` (a login, a payment); accepted says only that they went ahead. */
export const elicitUrl = (message, url) => elicited(asking(() => wit.elicit(page(message, url))));

/**
 * Asks the client's model for a message. `prompt` is a string (one user
 * message) or an array of [role, content] pairs (role 'user' or 'assistant',
 * content a string or a text/image/audio block). Options: `system`,
 * `maxTokens` (1000; counted against the plugin's sampling budget),
 * `temperature`, `stop`, `modelHints`, `costPriority`, `speedPriority`,
 * `intelligencePriority`. Returns `{ text, model, stopReason, content }`.
 */
export const sample = (prompt, options) => sampled(asking(() => wit.sample(samplingRequest(prompt, options))));

/** The client's roots, `[{ uri, name }]`: information only, never a folder grant. */
export const roots = () => asking(() => wit.roots()).map(root);

/** Questions for th.ask. */
export const askElicit = (message, schema) => ({ tag: 'elicit', val: form(message, schema) });
export const askElicitUrl = (message, url) => ({ tag: 'elicit', val: page(message, url) });
export const askSample = (prompt, options) => ({ tag: 'sample', val: samplingRequest(prompt, options) });
export const askRoots = () => ({ tag: 'roots' });

/**
 * Asks several things at once: `questions` maps keys (1 to 64 of
 * `a-z A-Z 0-9 _ -`, unique within the call) to th.askElicit(...),
 * th.askElicitUrl(...), th.askSample(...) or th.askRoots() (an object, a Map
 * or an array of [key, question]). Returns an object of the same keys: an
 * elicited answer, a sampled reply, an array of roots, or the RequestError
 * that question met (returned, not thrown).
 */
export function ask(questions) {
  const pairs = Array.isArray(questions)
    ? questions
    : questions instanceof Map
      ? [...questions]
      : Object.entries(questions);
  const answers = wit.ask(pairs);
  const out = {};
  pairs.forEach(([key], i) => {
    const answer = answers[i];
    if (answer.tag === 'err') {
      out[key] = requestError(answer.val) ?? new RequestError('failed', String(answer.val));
      return;
    }
    try {
      const value = answer.val;
      out[key] =
        value.tag === 'elicited' ? elicited(value.val) : value.tag === 'sampled' ? sampled(value.val) : value.val.map(root);
    } catch (err) {
      if (!(err instanceof RequestError)) throw err;
      out[key] = err;
    }
  });
  return out;
}
