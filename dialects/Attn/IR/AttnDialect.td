//===- AttnDialect.td - The attn dialect -------------------*- tablegen -*-===//
//
// The attn dialect: the ops of the attnc graph format (docs/graph-format.md),
// one per primitive, plus the fused attention op that every attention chain
// becomes. Tensors are builtin ranked tensors; run-time sizes are dynamic
// dims whose values travel as `index` operands where a result needs them.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_DIALECT_TD
#define ATTN_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let cppNamespace = "::mlir::attn";
  let summary = "Attention graphs: primitive ops and the fused attention op";
  let description = [{
    Holds an attnc graph after import: one op per primitive of the graph
    format (matmul, softmax, causal_mask, ...) and `attn.attention`, the
    fused op with every score kind, mask, bias and layout as attributes and
    optional operands. The `attn-fuse-attention` pass rewrites exporter-style
    chains into `attn.attention`; backends lower `attn.attention` to tiled
    online-softmax kernels and the remaining primitives through linalg.
  }];
  let useDefaultAttributePrinterParser = 1;
}

def Attn_ScoreKind : I32EnumAttr<"ScoreKind", "how a query and a key score", [
  I32EnumAttrCase<"dot", 0>,
  I32EnumAttrCase<"general", 1>,
  I32EnumAttrCase<"additive", 2>,
  I32EnumAttrCase<"cosine", 3>
]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}
def Attn_ScoreKindAttr : EnumAttr<Attn_Dialect, Attn_ScoreKind, "score"> {
  let assemblyFormat = "`<` $value `>`";
}

def Attn_Layout : I32EnumAttr<"Layout", "order of q, k, v and output dims", [
  I32EnumAttrCase<"bhsd", 0>,
  I32EnumAttrCase<"bshd", 1>
]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}
def Attn_LayoutAttr : EnumAttr<Attn_Dialect, Attn_Layout, "layout"> {
  let assemblyFormat = "`<` $value `>`";
}

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

#endif // ATTN_DIALECT_TD
