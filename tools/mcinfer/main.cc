// mcinfer: batch inference of Hugging Face encoder checkpoints on every core.

#include "cli.h"

int main(int argc, char** argv) { return mcinfer::cli::run_as_process(argc, argv); }
