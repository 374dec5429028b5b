// __NAME__: a toolhost plugin of typed functions. Build it with ./build.sh,
// which writes __NAME__.wasm; copy that file into toolhost's plugins folder.
//
// Each function wit/world.wit exports is a tool, exported here under its
// camelCase name. A record is an object with camelCase keys; for a `result`,
// the returned value is `ok`, and a thrown string (or an object with a
// `payload`) is `err`.

export function __FUNC_CAMEL__(text) {
  if (text === "") {
    // An `err` is the tool's error: the model reads it and can call again.
    throw "`text` is empty: give the text to count";
  }
  const words = text.split(/\s+/).filter((word) => word !== "").length;
  return { words, characters: [...text].length };
}
