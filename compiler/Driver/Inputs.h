//===- Inputs.h - Run-time sizes and input tensors for a run ------*- C++
//-*-===//
//
// Turns the `--dim` and `--input` flags of `attnc run` / `attnc reference`
// into bound run-time sizes and one tensor per graph input: read from a
// `.npy` file when given, random from the seed otherwise.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DRIVER_INPUTS_H
#define ATTNC_DRIVER_INPUTS_H

#include "Graph/Graph.h"
#include "Support/Tensor.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attnc {

struct RunInputs {
  DimBindings dims;
  /// In Graph::inputs order; empty for inputs no --input flag gives.
  std::vector<std::optional<Tensor>> tensors;
};

/// The run-time sizes `dimFlags` ("NAME=V") give, not necessarily all of
/// them; `flagOf` (if given) gets the flag behind each. Throws UserError
/// naming the flag at fault.
DimBindings bindDimFlags(const Graph &graph,
                         const std::vector<std::string> &dimFlags,
                         std::map<std::string, std::string> *flagOf = nullptr);

/// Binds the run-time sizes from `dimFlags` ("NAME=V") and the shapes of the
/// files in `inputFlags` ("NAME=PATH"), and reads those files. Throws
/// UserError naming the flag at fault.
RunInputs bindInputs(const Graph &graph,
                     const std::vector<std::string> &dimFlags,
                     const std::vector<std::string> &inputFlags);

/// Every input: the files of `run`, random tensors from `seed` for the rest.
std::vector<Tensor> completeInputs(const Graph &graph, RunInputs run,
                                   uint64_t seed);

/// The random tensor `attnc` uses for input `inputIndex` of `graph` under
/// `seed`: its own stream per input, so supplying one input from a file does
/// not change the others. Floats are standard normal rounded to the dtype;
/// key lengths are uniform in [0, T]; attention masks are mostly true.
Tensor randomInput(const Graph &graph, const DimBindings &dims, int inputIndex,
                   uint64_t seed);

} // namespace attnc

#endif // ATTNC_DRIVER_INPUTS_H
