//===- EmbedHalideRuntimes.cpp - Halide's runtimes, compiled at build time ===//
//
//   attnc-embed-halide-runtimes DIR SOURCE
//
// Compiles Halide's runtime for every target class into DIR/CLASS.o and
// writes SOURCE, a C++ file that embeds those objects (.incbin) and defines
// embeddedHalideRuntime. The runtime depends on the target class alone, so
// attnc links it into every Halide library from here instead of compiling
// it (about a second and a half) on every compile.
//
//===----------------------------------------------------------------------===//

#include "Halide/HalideTarget.h"

#include <Halide.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

/// `text` as the inside of a C string literal holding an assembler string.
std::string escapedForAsm(const std::string &text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += "\\\\\\";
    out += c;
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: attnc-embed-halide-runtimes DIR SOURCE\n");
    return 2;
  }
  try {
    std::filesystem::path dir = std::filesystem::absolute(argv[1]);
    std::filesystem::create_directories(dir);
    std::ostringstream assembly, lookup;
    int index = 0;
    for (const attnc::HalideTargetClass &entry : attnc::kHalideTargetClasses) {
      std::string object = (dir / (std::string(entry.targetClass) + ".o"));
      Halide::compile_standalone_runtime(object,
                                         Halide::Target(entry.halideTarget));
      std::string symbol = "attnc_halide_runtime_" + std::to_string(index++);
      assembly << "    \".balign 64\\n"
               << symbol << ":\\n\"\n"
               << "    \".incbin \\\"" << escapedForAsm(object) << "\\\"\\n\"\n"
               << "    \"" << symbol << "_end:\\n\"\n";
      lookup << "  if (targetClass == \"" << entry.targetClass << "\")\n"
             << "    return {" << symbol << ", size_t(" << symbol << "_end - "
             << symbol << ")};\n";
    }
    std::ostringstream source;
    source << "// Written by attnc-embed-halide-runtimes: Halide's runtime "
              "for every target class.\n"
           << "#include \"Halide/HalideTarget.h\"\n\n#include <cstddef>\n\n"
           << "asm(\".pushsection .rodata\\n\"\n"
           << assembly.str() << "    \".popsection\\n\");\n\n";
    for (int i = 0; i < index; ++i)
      source << "extern \"C\" const char attnc_halide_runtime_" << i
             << "[], attnc_halide_runtime_" << i << "_end[];\n";
    source << "\nstd::string_view\nattnc::embeddedHalideRuntime("
              "std::string_view targetClass) {\n"
           << lookup.str() << "  return {};\n}\n";
    std::string path = argv[2];
    std::ofstream out(path + ".tmp");
    out << source.str();
    out.close();
    if (!out)
      throw std::runtime_error("cannot write " + path + ".tmp");
    std::filesystem::rename(path + ".tmp", path);
  } catch (const std::exception &error) {
    std::fprintf(stderr, "attnc-embed-halide-runtimes: %s\n", error.what());
    return 1;
  }
  return 0;
}
