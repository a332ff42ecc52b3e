//===- tools/plan-opt/plan-opt.cpp - run passes on textual IR -------------===//
//
//   plan-opt in.ir --passes=autodiff,optimizer [--print-after-all] [--time-passes]
//   plan-opt model.plan --passes=...     (the frontend lowers the plan first)
//
// Reads a module, verifies it, runs the named passes (verifying after each)
// and prints the result. Exit codes: 0 done, 1 bad input or a failing pass,
// 2 bad command line.
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"
#include "compiler/TrainOptions.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/PassManager.h"
#include "passes/PassOptionTable.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

using namespace planc;

namespace {

const char *kHelp = R"(plan-opt - run planc's IR passes on one module

USAGE: plan-opt <in.ir|in.plan> [options]

OPTIONS:
  --passes=<a,b,c>        the passes to run, in order (see --list-passes)
  --list-passes           print every pass with its one-line description
  --print-after=<pass>    print the IR after that pass (repeatable)
  --print-after-all       print the IR after every pass
  --print-after-change    print the IR after a pass only if it changed it
  --time-passes           print the time each pass took
  --no-verify-each        do not verify after each pass (verification is on by default)
  --reproducer-dir=<dir>  where a failing pass's input IR is written (default: .)
  --set <block.key=value> for a .plan input: override a setting (repeatable)
  --pass-option <key=value> a setting the passes read, e.g. optimizer=sgd (repeatable;
                          a .plan input's settings give the defaults; the keys follow)
  -o <file>               write the result there instead of standard output
  --help                  this text

A .plan input is checked and lowered by the frontend (as `planc emit --emit=ir`).
An unknown --pass-option key is a command-line error; a bad value is an error
of the input (exit code 1).

)";

int usage(const std::string &msg) {
  llvm::errs() << "plan-opt: error: " << msg << "\nrun 'plan-opt --help' for usage\n";
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  std::string input, output = "-", pipeline;
  PassManagerOptions pm;
  FrontendOptions fe;
  std::vector<std::pair<std::string, std::string>> passOptionOverrides;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const std::string &flag, std::string &out) {
      if (a.rfind(flag + "=", 0) == 0) {
        out = a.substr(flag.size() + 1);
        return true;
      }
      if (a == flag && i + 1 < argc) {
        out = argv[++i];
        return true;
      }
      return false;
    };
    std::string v;
    if (a == "--help" || a == "-h") {
      llvm::outs() << kHelp;
      printPassOptionHelp(llvm::outs());
      return 0;
    } else if (a == "--list-passes") {
      for (const PassInfo &p : registeredPasses()) llvm::outs() << "  " << p.name << "  " << p.description << "\n";
      return 0;
    } else if (value("--passes", v)) {
      pipeline = v;
    } else if (value("--print-after", v)) {
      if (!findPass(v)) return usage("--print-after names unknown pass '" + v + "'");
      pm.printAfter.insert(v);
    } else if (a == "--print-after-all") {
      pm.printAfterAll = true;
    } else if (a == "--print-after-change") {
      pm.printAfterChange = true;
    } else if (a == "--time-passes") {
      pm.timePasses = true;
    } else if (a == "--no-verify-each") {
      pm.verifyEach = false;
    } else if (value("--reproducer-dir", v)) {
      pm.reproducerDir = v;
    } else if (value("--set", v)) {
      fe.setOverrides.push_back(v);
    } else if (value("--pass-option", v)) {
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) return usage("--pass-option needs key=value, got '" + v + "'");
      if (llvm::Error e = checkPassOptionKey(v.substr(0, eq))) return usage(llvm::toString(std::move(e)));
      passOptionOverrides.push_back({v.substr(0, eq), v.substr(eq + 1)});
    } else if (value("-o", v)) {
      output = v;
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      return usage("unknown option '" + a + "'");
    } else {
      if (!input.empty()) return usage("more than one input file");
      input = a;
    }
  }
  if (input.empty()) return usage("no input file");

  std::unique_ptr<ir::Module> module;
  PassPipelineOptions passOptions;
  if (llvm::StringRef(input).endswith(".plan")) {
    Compilation c(fe);
    c.setDiagnosticOutput(llvm::errs(), /*json=*/false, llvm::errs().has_colors());
    if (!c.loadFile(input) || !c.check()) return 1;
    module = lowerToIR(c);
    if (!module) return 1;
    passOptions = passOptionsFromConfig(c.getConfig());
  } else {
    auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(input);
    if (!buffer) {
      llvm::errs() << "plan-opt: error: cannot read '" << input << "': " << buffer.getError().message() << "\n";
      return 1;
    }
    llvm::SourceMgr sm;
    unsigned id = sm.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
    auto parsed = ir::parseIR(sm, id);
    if (!parsed) {
      llvm::logAllUnhandledErrors(parsed.takeError(), llvm::errs());
      return 1;
    }
    module = std::move(*parsed);
  }
  if (llvm::Error e = ir::verify(*module)) {
    llvm::errs() << input << ": error: the input does not verify:\n" << llvm::toString(std::move(e)) << "\n";
    return 1;
  }
  for (auto &[key, val] : passOptionOverrides)
    if (llvm::Error e = setPassOption(passOptions, key, val)) {
      llvm::errs() << "plan-opt: error: " << llvm::toString(std::move(e)) << "\n";
      return 1;
    }
  PassManager manager(pm, passOptions);
  if (llvm::Error e = manager.addPipeline(pipeline)) return usage(llvm::toString(std::move(e)));
  if (llvm::Error e = manager.run(*module)) {
    llvm::errs() << "plan-opt: error: " << llvm::toString(std::move(e)) << "\n";
    return 1;
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(output, ec);
  if (ec) {
    llvm::errs() << "plan-opt: error: cannot write '" << output << "': " << ec.message() << "\n";
    return 1;
  }
  ir::print(*module, os);
  return 0;
}
