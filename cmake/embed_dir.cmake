# embed_dir.cmake - turn a folder's files into one C source defining
#   const char *FUNC(const char *name, size_t *len);
# which returns a file's bytes (NUL-terminated; *len without the NUL) by its
# name relative to the folder, or NULL for a name that is not embedded.
#   cmake -DDIR=folder -DFILES=a.html,b.js -DOUT=file.c -DFUNC=name -P embed_dir.cmake
set(body "/* generated from ${DIR} by cmake/embed_dir.cmake; do not edit */\n#include <stddef.h>\n#include <string.h>\n")
set(table "")
set(i 0)
string(REPLACE "," ";" FILES "${FILES}")
foreach(f IN LISTS FILES)
  file(READ "${DIR}/${f}" HEX HEX)
  string(LENGTH "${HEX}" LEN)
  math(EXPR LEN "${LEN} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," BYTES "${HEX}")
  string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" BYTES "${BYTES}")
  string(APPEND body "static const char f${i}[] = {\n${BYTES}0x00};\n")
  string(APPEND table "    {\"${f}\", f${i}, ${LEN}},\n")
  math(EXPR i "${i} + 1")
endforeach()
string(APPEND body
  "static const struct { const char *name; const char *data; size_t len; } files[] = {\n${table}};\n"
  "const char *${FUNC}(const char *name, size_t *len);\n"
  "const char *${FUNC}(const char *name, size_t *len) {\n"
  "    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)\n"
  "        if (strcmp(files[i].name, name) == 0) {\n"
  "            if (len) *len = files[i].len;\n"
  "            return files[i].data;\n"
  "        }\n"
  "    return NULL;\n"
  "}\n")
file(WRITE "${OUT}.tmp" "${body}")
file(RENAME "${OUT}.tmp" "${OUT}")
