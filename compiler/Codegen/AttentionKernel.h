//===- AttentionKernel.h - attn.attention as a tiled CPU task ---*- C++ -*-===//
#ifndef ATTNC_CODEGEN_ATTENTIONKERNEL_H
#define ATTNC_CODEGEN_ATTENTIONKERNEL_H
#endif
