//===- frontend/Frontend.cpp - files, imports and the frontend pipeline --===//

#include "frontend/Frontend.h"
#include "frontend/Builtins.h"
#include "frontend/Lowering.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace planc;
using llvm::SMLoc;
using llvm::SMRange;

Compilation::Compilation(FrontendOptions opts) : options(std::move(opts)), diags(sm) {
  diags.setWarningsAsErrors(options.warningsAsErrors);
  diags.setSuppressWarnings(options.suppressWarnings);
  diags.setErrorLimit(options.errorLimit);
}

Compilation::~Compilation() = default;

void Compilation::setDiagnosticOutput(llvm::raw_ostream &os, bool json, bool colors) {
  diags.setConsumer(json ? makeJsonConsumer(sm, os) : makeTextConsumer(sm, os, colors));
}

void Compilation::setDiagnosticConsumer(std::unique_ptr<DiagnosticConsumer> consumer) {
  diags.setConsumer(std::move(consumer));
}

unsigned Compilation::addBuffer(llvm::StringRef name, llvm::StringRef text, SMRange from) {
  return sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, name), from.Start);
}

unsigned Compilation::addFile(llvm::StringRef path, SMRange from) {
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status)) {
    diags.report(DiagID::err_file_unreadable, from) << path << ec.message();
    return 0;
  }
  if (llvm::sys::fs::is_directory(status)) {
    diags.report(DiagID::err_file_is_directory, from) << path;
    return 0;
  }
  // Refuse before reading: a huge file is a mistake, not a plan.
  if (llvm::sys::fs::is_regular_file(status) && status.getSize() > options.maxFileBytes) {
    diags.report(DiagID::err_file_too_large, from)
        << path << uint64_t(status.getSize()) << uint64_t(options.maxFileBytes);
    return 0;
  }
  if (llvm::sys::fs::is_regular_file(status)) {
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/true);
    if (!buffer) {
      diags.report(DiagID::err_file_unreadable, from) << path << buffer.getError().message();
      return 0;
    }
    return sm.AddNewSourceBuffer(std::move(*buffer), from.Start);
  }
  // A pipe or a device: read in chunks and stop past the limit (/dev/zero never ends).
  llvm::Expected<llvm::sys::fs::file_t> fd = llvm::sys::fs::openNativeFileForRead(path);
  if (!fd) {
    diags.report(DiagID::err_file_unreadable, from) << path << llvm::toString(fd.takeError());
    return 0;
  }
  std::string text;
  char chunk[65536];
  while (text.size() <= options.maxFileBytes) {
    llvm::Expected<size_t> n = llvm::sys::fs::readNativeFile(*fd, llvm::makeMutableArrayRef(chunk, sizeof chunk));
    if (!n) {
      llvm::sys::fs::closeFile(*fd);
      diags.report(DiagID::err_file_unreadable, from) << path << llvm::toString(n.takeError());
      return 0;
    }
    if (*n == 0) break;
    text.append(chunk, *n);
  }
  llvm::sys::fs::closeFile(*fd);
  if (text.size() > options.maxFileBytes) {
    diags.report(DiagID::err_file_too_large, from) << path << ("more than " + std::to_string(options.maxFileBytes))
                                                   << uint64_t(options.maxFileBytes);
    return 0;
  }
  return addBuffer(path, text, from);
}

namespace {
bool isBlank(llvm::StringRef text) { return text.trim().empty(); }
} // namespace

bool Compilation::loadFile(llvm::StringRef path) {
  unsigned id = addFile(path, SMRange());
  if (!id) return false;
  mainBuffer = id;
  return loadString(path, "");
}

bool Compilation::loadString(llvm::StringRef name, llvm::StringRef text) {
  if (loaded) return false;
  loaded = true;
  if (!mainBuffer) mainBuffer = addBuffer(name, text, SMRange());
  llvm::StringRef content = sm.getMemoryBuffer(mainBuffer)->getBuffer();
  if (isBlank(content)) {
    // An empty file is reported at its first position so tools still get file:line:col.
    diags.report(DiagID::err_file_empty, SMLoc::getFromPointer(content.begin())) << name;
    return false;
  }
  auto file = parseFile(sm, mainBuffer, diags, options.limits);
  if (!file) return false;
  ast::SourceFile *raw = file.get();
  program.files.push_back(std::move(file));
  program.mainFile = raw;
  // The main file is keyed like an imported one, so a cycle back to it is found.
  llvm::SmallString<256> real;
  std::string mainKey = "file:" + (llvm::sys::fs::real_path(name, real) ? name.str() : std::string(real.str()));
  loadedByKey[mainKey] = raw;
  displayNames[mainKey] = name.str();
  std::vector<std::string> stack{mainKey};
  bool ok = loadImports(*raw, stack);
  // Declarations of the imports are registered first so a redefinition in the
  // main file is the one reported, pointing at the library's original.
  for (size_t i = 1; i < program.files.size(); ++i) ok &= registerDecls(*program.files[i], false);
  ok &= registerDecls(*raw, true);
  return ok && !diags.hasErrors();
}

bool Compilation::loadImports(ast::SourceFile &file, std::vector<std::string> &stack) {
  bool ok = true;
  for (const ast::ImportDecl &imp : file.imports) {
    std::string key, bufferName, text;
    bool fromStdlib = false;
    llvm::StringRef path = imp.path;
    if (!imp.isFile && path.startswith("std.")) {
      std::string module = path.substr(4).str();
      key = "std:" + module;
      bufferName = "std/" + module + ".plan";
      fromStdlib = options.stdlibDir.empty();
      if (fromStdlib) {
        auto &lib = embeddedStdlib();
        auto it = lib.find(module);
        if (it == lib.end()) {
          std::vector<std::string> names;
          for (auto &m : lib) names.push_back("std." + m.first);
          auto d = diags.report(DiagID::err_unknown_std_module, imp.range);
          d << path;
          std::string guess = closestMatch(path, names);
          if (!guess.empty()) {
            d.note(DiagID::note_did_you_mean, imp.range, {guess});
          }
          ok = false;
          continue;
        }
        text = it->second;
      } else {
        bufferName = options.stdlibDir + "/" + module + ".plan";
      }
    } else {
      llvm::SmallString<256> resolved;
      llvm::StringRef rel = imp.path;
      std::string dotted;
      if (!imp.isFile) { // `import models.blocks` -> models/blocks.plan
        dotted = imp.path;
        std::replace(dotted.begin(), dotted.end(), '.', '/');
        dotted += ".plan";
        rel = dotted;
      }
      if (llvm::sys::path::is_absolute(rel)) {
        resolved = rel;
      } else {
        resolved = llvm::sys::path::parent_path(file.fileName);
        llvm::sys::path::append(resolved, rel);
      }
      bufferName = std::string(resolved.str());
      llvm::SmallString<256> real;
      key = "file:" + (llvm::sys::fs::real_path(bufferName, real) ? bufferName : std::string(real.str()));
    }
    if (!displayNames.count(key)) displayNames[key] = bufferName;
    if (std::find(stack.begin(), stack.end(), key) != stack.end()) {
      std::string chain;
      for (auto &k : stack) chain += displayNames[k] + " -> ";
      chain += displayNames[key];
      diags.report(DiagID::err_import_cycle, imp.range) << chain;
      ok = false;
      continue;
    }
    if (loadedByKey.count(key)) continue;
    unsigned id = 0;
    if (fromStdlib) {
      id = addBuffer(bufferName, text, imp.range);
    } else {
      if (!llvm::sys::fs::exists(bufferName)) {
        diags.report(DiagID::err_import_not_found, imp.range)
            .note(DiagID::note_searched, imp.range, {"'" + bufferName + "'"})
            << imp.path;
        ok = false;
        continue;
      }
      id = addFile(bufferName, imp.range);
    }
    if (!id) {
      ok = false;
      continue;
    }
    if (isBlank(sm.getMemoryBuffer(id)->getBuffer())) {
      loadedByKey[key] = nullptr; // an empty library is legal, if useless
      continue;
    }
    auto parsed = parseFile(sm, id, diags, options.limits);
    if (!parsed) {
      ok = false;
      continue;
    }
    ast::SourceFile *raw = parsed.get();
    program.files.push_back(std::move(parsed));
    loadedByKey[key] = raw;
    stack.push_back(key);
    ok &= loadImports(*raw, stack);
    stack.pop_back();
  }
  return ok;
}

bool Compilation::registerDecls(const ast::SourceFile &file, bool isMain) {
  bool ok = true;
  for (const auto &layer : file.layers) {
    if (isBuiltinOp(layer->name)) {
      diags.report(DiagID::err_layer_shadows_builtin, layer->nameRange) << layer->name;
      ok = false;
      continue;
    }
    auto [it, inserted] = program.layers.emplace(layer->name, layer.get());
    if (!inserted) {
      diags.report(DiagID::err_redefinition, layer->nameRange)
          .note(DiagID::note_previous_definition, it->second->nameRange)
          << "layer" << layer->name;
      ok = false;
    }
  }
  for (const auto &map : file.nameMaps) {
    auto [it, inserted] = program.nameMaps.emplace(map->name, map.get());
    if (!inserted) {
      diags.report(DiagID::err_redefinition, map->nameRange)
          .note(DiagID::note_previous_definition, it->second->nameRange)
          << "name map" << map->name;
      ok = false;
    }
  }
  for (const auto &model : file.models) {
    if (!isMain) {
      diags.report(DiagID::err_model_in_import, model->nameRange) << file.fileName << model->name;
      ok = false;
      continue;
    }
    if (program.model) {
      diags.report(DiagID::err_multiple_models, model->nameRange)
          .note(DiagID::note_previous_definition, program.model->nameRange)
          << model->name;
      ok = false;
      continue;
    }
    program.model = model.get();
  }
  for (const auto &block : file.blocks) {
    const ast::ConfigBlock **slot = block->kind == ast::ConfigBlock::Kind::Train ? &program.train
                                    : block->kind == ast::ConfigBlock::Kind::Cluster ? &program.cluster
                                                                                     : &program.parallel;
    if (!isMain) continue; // a library's settings never leak into the plan
    if (*slot) {
      diags.report(DiagID::err_duplicate_block, block->keywordRange)
          .note(DiagID::note_previous_definition, (*slot)->keywordRange)
          << ast::spelling(block->kind);
      ok = false;
      continue;
    }
    *slot = block.get();
  }
  return ok;
}

bool Compilation::readDimOverrides() {
  bool ok = true;
  for (const std::string &text : options.dimOverrides) {
    std::string name = "<--dim " + text + ">";
    unsigned id = sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, name), llvm::SMLoc());
    llvm::StringRef buf = sm.getMemoryBuffer(id)->getBuffer();
    llvm::SMRange whole(llvm::SMLoc::getFromPointer(buf.begin()), llvm::SMLoc::getFromPointer(buf.end()));
    auto [lhs, rhs] = buf.split('=');
    lhs = lhs.trim();
    int64_t value = 0;
    if (lhs.empty() || rhs.trim().getAsInteger(10, value) || value < 1) {
      diags.report(DiagID::err_dim_syntax, whole) << text;
      ok = false;
      continue;
    }
    // Only the model's own integer `let`s: a layer's dims follow from them.
    bool found = false;
    if (program.model)
      for (const auto &item : program.model->body)
        if (auto *l = llvm::dyn_cast<ast::LetItem>(item.get()))
          for (const auto &b : l->bindings)
            found |= b.name == lhs;
    if (!found) {
      diags.report(DiagID::err_dim_unknown, whole) << (program.model ? program.model->name : "") << lhs;
      ok = false;
      continue;
    }
    config.dimOverrides[lhs.str()] = value;
  }
  return ok;
}

bool Compilation::check() {
  if (!program.mainFile) return false;
  std::vector<SetOverride *> raw;
  bool ok = true;
  for (const std::string &text : options.setOverrides) {
    auto o = parseSetOverride(text, sm, diags);
    if (!o) {
      ok = false;
      continue;
    }
    raw.push_back(o.get());
    overrides.push_back(std::move(o));
  }
  config = interpretConfig(program.train, program.cluster, program.parallel, raw, diags);
  ok &= readDimOverrides();
  config.hasTrain = program.train != nullptr;
  config.hasCluster = program.cluster != nullptr;
  config.hasParallel = program.parallel != nullptr;
  checkConfig(config, diags, options.meshReplaced);
  runSema(program, config, diags, model);
  // The name map is matched against the elaborated model's parameter paths.
  if (!diags.hasErrors()) checkNameMaps(program, config, model, diags, nameMap);
  return ok && !diags.hasErrors();
}

std::unique_ptr<ir::Module> planc::lowerToIR(Compilation &c) { return lowerToIR(c, c.getConfig().train.microBatch); }

std::unique_ptr<ir::Module> planc::lowerToIR(Compilation &c, int64_t batch) {
  return lowerToIR(c.getProgram(), c.getConfig(), c.getDiagnostics(), batch);
}
