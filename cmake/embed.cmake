# embed.cmake - turn a text file into a C source defining one function that
# returns its contents as a NUL-terminated string.
#   cmake -DIN=file -DOUT=file.c -DFUNC=name -P embed.cmake
file(READ "${IN}" HEX HEX)
string(LENGTH "${HEX}" LEN)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," BYTES "${HEX}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" BYTES "${BYTES}")
file(WRITE "${OUT}" "/* generated from ${IN} by cmake/embed.cmake; do not edit */\n"
     "static const char data[] = {\n${BYTES}0x00};\n"
     "const char *${FUNC}(void);\n"
     "const char *${FUNC}(void) { return data; }\n")
