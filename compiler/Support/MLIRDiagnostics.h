//===- MLIRDiagnostics.h - MLIR diagnostics as one line ----------*- C++
//-*-===//
//
// Header-only, for the parts of compiler/ that run MLIR passes on generated
// IR (the attnc_support library itself stays free of MLIR). Diagnostics from
// that IR describe compiler bugs, so they are gathered into the message of
// an internal error rather than printed.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_SUPPORT_MLIRDIAGNOSTICS_H
#define ATTNC_SUPPORT_MLIRDIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace attnc {

/// Runs `step`, appending every diagnostic it emits to `diagnostics` as
/// "location: message", separated by "; ".
inline mlir::LogicalResult
collectingDiagnostics(mlir::MLIRContext &context, std::string &diagnostics,
                      llvm::function_ref<mlir::LogicalResult()> step) {
  mlir::ScopedDiagnosticHandler handler(
      &context, [&](mlir::Diagnostic &diagnostic) {
        llvm::raw_string_ostream stream(diagnostics);
        stream << (diagnostics.empty() ? "" : "; ") << diagnostic.getLocation()
               << ": " << diagnostic;
        return mlir::success();
      });
  return step();
}

} // namespace attnc

#endif // ATTNC_SUPPORT_MLIRDIAGNOSTICS_H
