# Writes ScheduleSpaces.inc: schedules/space/{cpu,halide}.json as C++ string
# literals, so attnc tune needs no data files at run time.
# Run with -DSPACE_DIR=... -DOUTPUT=...
set(content "// Generated from schedules/space/*.json by EmbedSpace.cmake.\n")
file(READ "${SPACE_DIR}/cpu.json" text)
string(APPEND content "const char *const kCpuScheduleSpace = R\"attnc_space(${text})attnc_space\";\n")
file(READ "${SPACE_DIR}/halide.json" text)
string(APPEND content "const char *const kHalideScheduleSpace = R\"attnc_space(${text})attnc_space\";\n")
file(WRITE "${OUTPUT}.tmp" "${content}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
