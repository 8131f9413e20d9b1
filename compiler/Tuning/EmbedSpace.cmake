# Writes ScheduleSpaces.inc: schedules/space/cpu.json as a C++ string
# literal, so attnc tune needs no data files at run time.
# Run with -DSPACE=... -DOUTPUT=...
file(READ "${SPACE}" text)
set(content "// Generated from schedules/space/cpu.json by EmbedSpace.cmake.\n")
string(APPEND content "const char *const kCpuScheduleSpace = R\"attnc_space(${text})attnc_space\";\n")
file(WRITE "${OUTPUT}.tmp" "${content}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
