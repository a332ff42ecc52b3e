#!/usr/bin/env bash
# Installs what is missing, builds planc, checks the GPT-2 124M example (its
# diagnostics and the plan summary), compiles the tiny GPT example into a
# native executable (planc build) and trains it for 300 steps on a text file
# every Debian machine has (the GPL's text: its bytes are the tokens),
# printing the loss falling, then 300 bytes the model writes.
#
#   scripts/run-example.sh [extra planc check options, e.g. --set parallel.zero=1]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

bash scripts/setup.sh
bash scripts/build.sh --quiet planc
echo "\$ build/bin/planc check examples/gpt2-124m.plan $*"
build/bin/planc check examples/gpt2-124m.plan "$@"
echo
mkdir -p build/example
echo "\$ build/bin/planc build examples/tiny-gpt.plan -o build/example/tiny-gpt"
build/bin/planc build examples/tiny-gpt.plan -o build/example/tiny-gpt
echo
echo "\$ build/example/tiny-gpt --data text:/usr/share/common-licenses/GPL-3 --steps 300 --log-every 25 --sample 300"
exec build/example/tiny-gpt --data text:/usr/share/common-licenses/GPL-3 --steps 300 --log-every 25 --sample 300
