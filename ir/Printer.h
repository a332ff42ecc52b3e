//===- ir/Printer.h - the textual IR ----------------------------*- C++ -*-===//
//
// Prints a module in the textual form docs/ir.md defines and ir/Parser.h
// reads back: print(parse(print(m))) == print(m), byte for byte. Every value
// shows its shape, dtype and sharding; every op its attributes, layer path
// and .plan location. The printer never fails, also on a module the verifier
// would reject, so a broken module can always be written out as a reproducer.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_PRINTER_H
#define PLANC_IR_PRINTER_H

#include "ir/IR.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace planc::ir {

void print(const Module &m, llvm::raw_ostream &os);
std::string toText(const Module &m);

/// One op as it appears in a module, without indentation or newline.
void printOp(const Op &op, llvm::raw_ostream &os);
std::string toText(const Op &op);

/// `%name`, or `%"odd name"` when the name is not a plain identifier.
std::string valueRef(const Value &v);
/// `name` after `sigil` ('%' or '@'), quoted as valueRef quotes it.
std::string nameRef(char sigil, llvm::StringRef name);
/// `{a = 1, "odd key" = [2, 3]}`: an op's attributes as printOp writes them.
void printAttrs(const AttrMap &attrs, llvm::raw_ostream &os);
/// ` loc("file":line:col)` with its leading space; nothing for an unknown place.
void printLocation(const Location &loc, llvm::raw_ostream &os);
/// `1`, `-0.5`, `true`, `"text"`, `[1, 2]`: the literal the parser reads back.
std::string toText(const Attr &a);
/// The shortest decimal that reads back to exactly `x`, always with a '.' or
/// an exponent so it reads back as a float (`2.0`, `0.02`, `1e-05`, `inf`).
std::string formatFloat(double x);
/// `"..."` with `"`, `\`, newline, tab and non-printable bytes escaped.
std::string quote(llvm::StringRef s);

// The same, written straight to a stream: printing a large program (an
// execution plan of millions of lines) makes no string per token.
void printQuoted(llvm::StringRef s, llvm::raw_ostream &os);
void printNameRef(char sigil, llvm::StringRef name, llvm::raw_ostream &os);
void printAttr(const Attr &a, llvm::raw_ostream &os);
/// `[2, 3]`, `f32[2, 3]{shard(0, tp)}`: as ir::toString writes them.
void printShape(llvm::ArrayRef<int64_t> shape, llvm::raw_ostream &os);
void printType(const TensorType &t, llvm::raw_ostream &os);

} // namespace planc::ir

#endif
