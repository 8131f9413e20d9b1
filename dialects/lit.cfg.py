# -*- Python -*-
#
# The FileCheck suites of attn-opt: attn-dialects (the MLIR dialects,
# dialects/<Dialect>/{IR,Transforms}/test/*.mlir) and attn-codegen (the CPU
# backend's passes, compiler/Codegen/test/*.mlir), each kept beside what it
# tests. lit.site.cfg.py names the suite and its directories. Run it
# through the configured build directory (build/dialects holds
# lit.site.cfg.py, which sets the paths used here):
#
#   ctest -L lit -R dialects-lit --output-on-failure
#   /usr/bin/python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv build/dialects
#
# attn-opt, FileCheck and not are on PATH.

import os

import lit.formats

if not hasattr(config, "attnc_bin_dir"):
    lit_config.fatal(
        "run lit on the build directory (build/dialects), which holds the "
        "configured lit.site.cfg.py, not on the source directory")

config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]

# The tools: attn-opt first, then FileCheck and not of LLVM 19.
for tool, directory in [("attn-opt", config.attnc_bin_dir),
                        ("FileCheck", config.llvm_tools_dir),
                        ("not", config.llvm_tools_dir)]:
    if not os.path.exists(os.path.join(directory, tool)):
        lit_config.fatal("%s not found in %s (%s)" % (
            tool, directory,
            "build it: ninja -C build attn-opt" if tool == "attn-opt"
            else "install LLVM 19's tools: scripts/setup.sh"))
config.environment["PATH"] = os.pathsep.join(
    [config.attnc_bin_dir, config.llvm_tools_dir,
     config.environment.get("PATH", "")])

# Diagnostics are checked word for word: keep them in English and free of
# colour.
config.environment["LC_ALL"] = "C"
for name in ["TERM", "COLUMNS"]:
    config.environment.pop(name, None)
