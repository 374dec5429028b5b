// markup: example toolhost plugin in JavaScript. Text-shaping tools a model
// reaches for when it writes answers or follows links:
//
//   url_parse       splits a URL into its parts and decoded query parameters
//   markdown_table  renders rows of JSON objects as a GitHub-flavoured Markdown table
//   fill_template   fills a {{mustache}}-style template from JSON values
//
// Built into a component by componentize-js (see plugins/js/build.sh). The
// exported `tools` object implements the `tools` interface of wit/v0.1.0;
// errors are thrown as `{ tag: 'invalid-arguments' | 'failed', val: message }`,
// which the bindings turn into the WIT `call-error`.

import { log } from 'toolhost:plugin/log@0.1.0';

/** The arguments are wrong: the model can fix them and try again. */
function invalid(message) {
  return { tag: 'invalid-arguments', val: message };
}

/** The arguments were fine but the tool could not do its job. */
function failed(message) {
  return { tag: 'failed', val: message };
}

// ---- url_parse --------------------------------------------------------------

function urlParse({ url, base }) {
  let parsed;
  try {
    parsed = base === undefined ? new URL(url) : new URL(url, base);
  } catch {
    throw invalid(
      base === undefined
        ? `\`url\` ${JSON.stringify(url)} is not an absolute URL; give a full URL such as https://example.com/path, or pass \`base\` to resolve a relative one`
        : `\`url\` ${JSON.stringify(url)} cannot be resolved against \`base\` ${JSON.stringify(base)}`,
    );
  }
  const query = {};
  for (const [key, value] of parsed.searchParams) {
    if (!(key in query)) query[key] = value;
    else if (Array.isArray(query[key])) query[key].push(value);
    else query[key] = [query[key], value];
  }
  return {
    type: 'json',
    value: {
      href: parsed.href,
      origin: parsed.origin,
      protocol: parsed.protocol.replace(/:$/, ''),
      username: decodeURIComponent(parsed.username),
      host: parsed.host,
      hostname: parsed.hostname,
      port: parsed.port === '' ? null : Number(parsed.port),
      pathname: parsed.pathname,
      path_segments: parsed.pathname.split('/').filter(Boolean).map(decodeURIComponent),
      search: parsed.search,
      query,
      fragment: parsed.hash.replace(/^#/, ''),
    },
  };
}

// ---- markdown_table ---------------------------------------------------------

function cellText(value) {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/\r?\n/g, '<br>');
}

function markdownTable({ rows, columns, align = {} }) {
  if (rows.length === 0) throw invalid('`rows` is empty: give at least one object');
  const seen = [];
  for (const row of rows) {
    for (const key of Object.keys(row)) if (!seen.includes(key)) seen.push(key);
  }
  const chosen = columns ?? seen;
  if (chosen.length === 0) throw invalid('the rows have no fields, so the table would have no columns');
  for (const column of chosen) {
    if (!seen.includes(column)) {
      throw invalid(`column \`${column}\` is in none of the rows (they have ${seen.map((c) => `\`${c}\``).join(', ')})`);
    }
  }
  for (const [column, side] of Object.entries(align)) {
    if (!chosen.includes(column)) throw invalid(`\`align\` names \`${column}\`, which is not one of the table's columns`);
    if (!['left', 'right', 'center'].includes(side)) throw invalid(`\`align.${column}\` must be "left", "right" or "center"`);
  }
  const numeric = (column) => rows.every((row) => row[column] == null || typeof row[column] === 'number');
  const rule = (column) => {
    const side = align[column] ?? (numeric(column) ? 'right' : 'left');
    return side === 'right' ? '---:' : side === 'center' ? ':---:' : '---';
  };
  const line = (cells) => `| ${cells.join(' | ')} |`;
  const lines = [line(chosen.map(cellText)), line(chosen.map(rule))];
  for (const row of rows) lines.push(line(chosen.map((column) => cellText(row[column]))));
  return { type: 'text', value: lines.join('\n') };
}

// ---- fill_template ----------------------------------------------------------

/** The filled text may not grow past this (below the host's default output limit); nested sections multiply it. */
const MAX_OUTPUT = 256 << 10;

/** Parses a template into text, variable and section nodes. */
function parseTemplate(template) {
  const root = { children: [] };
  const stack = [root];
  const tag = /\{\{\s*([#^/]?)\s*([^{}]*?)\s*\}\}/g;
  let last = 0;
  for (let match; (match = tag.exec(template)); ) {
    const [whole, sigil, name] = match;
    const line = template.slice(0, match.index).split('\n').length;
    const top = stack[stack.length - 1];
    if (match.index > last) top.children.push({ text: template.slice(last, match.index) });
    last = match.index + whole.length;
    if (!/^(\.|[A-Za-z_][\w-]*(\.[A-Za-z_0-9][\w-]*)*)$/.test(name)) {
      throw invalid(`\`${whole}\` on line ${line} is not a valid tag: use {{name}}, {{a.b}}, {{#list}}…{{/list}} or {{^name}}…{{/name}}`);
    }
    if (sigil === '#' || sigil === '^') {
      const section = { section: name, inverted: sigil === '^', line, children: [] };
      top.children.push(section);
      stack.push(section);
    } else if (sigil === '/') {
      if (stack.length === 1 || top.section !== name) {
        const open = stack.length === 1 ? 'no section is open' : `\`{{#${top.section}}}\` from line ${top.line} is still open`;
        throw invalid(`\`{{/${name}}}\` on line ${line} closes nothing: ${open}`);
      }
      stack.pop();
    } else {
      top.children.push({ variable: name, line });
    }
  }
  if (stack.length > 1) {
    const open = stack[stack.length - 1];
    throw invalid(`\`{{#${open.section}}}\` opened on line ${open.line} is never closed: add {{/${open.section}}}`);
  }
  if (last < template.length) root.children.push({ text: template.slice(last) });
  return root;
}

/** Looks `name` up in the innermost context that has its first part. */
function lookup(contexts, name) {
  if (name === '.') return { found: true, value: contexts[contexts.length - 1] };
  const [first, ...rest] = name.split('.');
  for (let i = contexts.length - 1; i >= 0; i--) {
    const context = contexts[i];
    if (context !== null && typeof context === 'object' && Object.hasOwn(context, first)) {
      let value = context[first];
      for (const part of rest) {
        if (value === null || typeof value !== 'object' || !Object.hasOwn(value, part)) return { found: false };
        value = value[part];
      }
      return { found: true, value };
    }
  }
  return { found: false };
}

/** Collects the filled text, failing once it outgrows MAX_OUTPUT. */
class Output {
  constructor() {
    this.parts = [];
    this.size = 0;
  }

  push(text) {
    this.size += text.length;
    if (this.size > MAX_OUTPUT) {
      throw failed(`the filled template would be over ${MAX_OUTPUT / 1024} KiB (nested sections over long lists multiply it); fill a smaller part at a time`);
    }
    this.parts.push(text);
  }
}

function render(node, contexts, strict, out) {
  for (const child of node.children) {
    if (child.text !== undefined) {
      out.push(child.text);
    } else if (child.variable !== undefined) {
      const { found, value } = lookup(contexts, child.variable);
      if (!found && strict) {
        throw invalid(`the template uses \`{{${child.variable}}}\` on line ${child.line}, but \`values\` has no \`${child.variable}\` (add it, or pass "strict": false to leave it empty)`);
      }
      if (found && value !== null && value !== undefined) out.push(typeof value === 'string' ? value : JSON.stringify(value));
    } else {
      const { found, value } = lookup(contexts, child.section);
      if (!found && strict && !child.inverted) {
        throw invalid(`the section \`{{#${child.section}}}\` on line ${child.line} needs \`${child.section}\` in \`values\``);
      }
      const empty = !found || value === null || value === false || value === '' || value === 0 || (Array.isArray(value) && value.length === 0);
      if (child.inverted) {
        if (empty) render(child, contexts, strict, out);
      } else if (Array.isArray(value)) {
        for (const item of value) render(child, [...contexts, item], strict, out);
      } else if (!empty) {
        render(child, [...contexts, value], strict, out);
      }
    }
  }
}

function fillTemplate({ template, values, strict = true }) {
  const tree = parseTemplate(template);
  const out = new Output();
  render(tree, [values], strict, out);
  return { type: 'text', value: out.parts.join('') };
}

// ---- the plugin -------------------------------------------------------------

const TOOLS = {
  url_parse: {
    run: urlParse,
    description:
      'Parses a URL the way browsers do (WHATWG URL Standard) and returns JSON {"href", "origin", "protocol", ' +
      '"username", "host", "hostname", "port", "pathname", "path_segments", "search", "query", "fragment"}, ' +
      'with percent-decoded query parameters (a repeated key gives a list) and path segments. `base` resolves ' +
      'a relative URL. Example: {"url": "https://example.com:8080/a/b?q=1&q=2#top"} gives port 8080, ' +
      'path_segments ["a", "b"] and query {"q": ["1", "2"]}.',
    schema: {
      type: 'object',
      additionalProperties: false,
      required: ['url'],
      properties: {
        url: { type: 'string', description: 'The URL to parse, absolute unless `base` is given.' },
        base: { type: 'string', description: 'An absolute URL to resolve a relative `url` against. Optional.' },
      },
    },
  },
  markdown_table: {
    run: markdownTable,
    description:
      'Renders rows of JSON objects as a GitHub-flavoured Markdown table, one row per object and one column ' +
      'per field (in first-seen order, or as given in `columns`). Pipes and newlines in cells are escaped, ' +
      'missing and null fields are blank, numeric columns are right-aligned unless `align` says otherwise. ' +
      'Example: {"rows": [{"name": "Dune", "price": 9}, {"name": "Emma", "price": 5}]} gives ' +
      '"| name | price |\\n| --- | ---: |\\n| Dune | 9 |\\n| Emma | 5 |".',
    schema: {
      type: 'object',
      additionalProperties: false,
      required: ['rows'],
      properties: {
        rows: { type: 'array', items: { type: 'object' }, minItems: 1, maxItems: 10000, description: 'The table rows.' },
        columns: { type: 'array', items: { type: 'string' }, minItems: 1, description: 'Which fields to show, in order. Optional.' },
        align: {
          type: 'object',
          additionalProperties: { enum: ['left', 'right', 'center'] },
          description: 'Alignment per column, e.g. {"price": "right"}. Optional.',
        },
      },
    },
  },
  fill_template: {
    run: fillTemplate,
    description:
      'Fills a Mustache-style template from JSON values and returns the text (no HTML escaping). ' +
      '{{name}} and {{a.b}} insert a value; {{#list}}…{{/list}} repeats for each item of a list (inside, ' +
      '{{field}} reads the item and {{.}} is the item itself), or shows once for a truthy value; ' +
      '{{^name}}…{{/name}} shows when the value is missing, empty or false. With strict (the default) a ' +
      'missing value is an error naming it. Example: {"template": "Hi {{user.name}}!{{#tags}} #{{.}}{{/tags}}", ' +
      '"values": {"user": {"name": "Ada"}, "tags": ["math", "code"]}} gives "Hi Ada! #math #code".',
    schema: {
      type: 'object',
      additionalProperties: false,
      required: ['template', 'values'],
      properties: {
        template: { type: 'string', description: 'The template text.' },
        values: { type: 'object', description: 'The values the template refers to.' },
        strict: { type: 'boolean', description: 'Fail on a missing value (default true); false leaves it empty.' },
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

  callTool(name, argumentsJson) {
    const tool = TOOLS[name];
    if (!tool) throw failed(`this plugin has no tool named \`${name}\``);
    let args;
    try {
      args = JSON.parse(argumentsJson);
    } catch (err) {
      throw invalid(`the arguments are not valid JSON: ${err.message}`);
    }
    const result = tool.run(args);
    log('debug', 'called', [{ key: 'tool', value: name }]);
    return result.type === 'json'
      ? { tag: 'json', val: JSON.stringify(result.value) }
      : { tag: 'text', val: result.value };
  },
};
