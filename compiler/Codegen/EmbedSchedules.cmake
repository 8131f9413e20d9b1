# Writes DefaultSchedules.inc: schedules/cpu/*.json as C++ string literals,
# so attnc carries its default schedules and needs no data files at run time.
# Run with -DSCHEDULE_DIR=... -DOUTPUT=...
file(GLOB schedules "${SCHEDULE_DIR}/*.json")
list(SORT schedules)
set(content "// Generated from schedules/cpu/*.json by EmbedSchedules.cmake.\n")
string(APPEND content "const std::pair<const char *, const char *> kDefaultSchedules[] = {\n")
foreach(schedule ${schedules})
  get_filename_component(name "${schedule}" NAME_WE)
  file(READ "${schedule}" text)
  string(APPEND content "    {\"${name}\", R\"attnc_schedule(${text})attnc_schedule\"},\n")
endforeach()
string(APPEND content "};\n")
file(WRITE "${OUTPUT}.tmp" "${content}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
