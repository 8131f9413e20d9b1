//===- AttentionKernel.cpp - attn.attention as a tiled CPU task -----------===//
#include "Codegen/AttentionKernel.h"
