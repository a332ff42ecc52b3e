//===- ir/ops/Support.h - what the op families share ------------*- C++ -*-===//
//
// Private to ir/ops/ and ir/OpDef.cpp: the helpers of the op families.
//
//===----------------------------------------------------------------------===//
