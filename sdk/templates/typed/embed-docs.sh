# The tools are described by the doc comments in wit/, which the build above
# leaves out of the component: toolhost copies them in (`toolhost embed-docs`).
toolhost="${TOOLHOST:-toolhost}"
if command -v "$toolhost" >/dev/null; then
    "$toolhost" embed-docs __NAME__.wasm --wit wit
else
    echo "note: $toolhost is not on PATH, so __NAME__.wasm lacks the doc comments in wit/ and its tools are described by their signatures; once toolhost is installed, run: toolhost embed-docs __NAME__.wasm --wit wit" >&2
fi
