// The reference interpreter runs ir/ kernels on a scratch module: not checked.
void run(const planc::ir::Module &scratch);
