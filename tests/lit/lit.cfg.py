# -*- Python -*-
#
# The attnc lit suite. Run it through the configured build directory
# (build/tests/lit holds lit.site.cfg.py, which sets the paths used here):
#
#   ctest -L lit --output-on-failure
#   /usr/bin/python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv build/tests/lit
#
# Substitutions: %python (a Python with numpy), %examples (examples/graphs),
# %inputs (tests/lit/Inputs), %fake_cuda (the recording stand-in for the CUDA
# driver, tests/runtime/fake_cuda_driver.c); attnc, FileCheck, not, count and
# split-file are on PATH. Feature `sanitize`: attnc is built with the
# sanitizers (scripts/test.sh --sanitize); tests whose time goes to Halide's
# uninstrumented compiles, several times slower under ASan's allocator, are
# UNSUPPORTED there and run in the normal build.

import os

import lit.formats

if not hasattr(config, "attnc_bin_dir"):
    lit_config.fatal(
        "run lit on the build directory (build/tests/lit), which holds the "
        "configured lit.site.cfg.py, not on the source directory")

config.name = "attnc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
if config.attnc_sanitize:
    config.available_features.add("sanitize")

# The tools: attnc first, then FileCheck, not, count and split-file of LLVM 19.
for tool, directory in [("attnc", config.attnc_bin_dir),
                        ("FileCheck", config.llvm_tools_dir),
                        ("not", config.llvm_tools_dir),
                        ("count", config.llvm_tools_dir),
                        ("split-file", config.llvm_tools_dir)]:
    if not os.path.exists(os.path.join(directory, tool)):
        lit_config.fatal("%s not found in %s (%s)" % (
            tool, directory, "build it: ninja -C build attnc" if tool == "attnc"
            else "install LLVM 19's tools: scripts/setup.sh"))
config.environment["PATH"] = os.pathsep.join(
    [config.attnc_bin_dir, config.llvm_tools_dir,
     config.environment.get("PATH", "")])

# compile and run take their schedule from attnc tune's default database when
# one exists; the suite never reads the user's.
config.environment["XDG_CACHE_HOME"] = os.path.join(
    os.path.dirname(config.attnc_bin_dir), "tests", "lit", "xdg-cache")
config.environment.pop("HOME", None)

# Messages are checked word for word: keep them in English and free of colour.
config.environment["LC_ALL"] = "C"
for name in ["TERM", "COLUMNS"]:
    config.environment.pop(name, None)

config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%examples", config.attnc_examples_dir))
config.substitutions.append(
    ("%inputs", os.path.join(config.test_source_root, "Inputs")))
config.substitutions.append(
    ("%fake_cuda", os.path.join(config.attnc_obj_root, "tests", "runtime",
                                "fake-cuda-full", "libcuda.so.1")))
