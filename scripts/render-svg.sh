#!/bin/sh
# Renders an SVG that batchfit wrote (batchfit probe --plot, batchfit plot)
# the way a browser shows it: headless Chromium takes a screenshot, and
# xmllint checks that the file is well-formed XML first. Installs chromium
# and xmllint from Debian when missing (needs root or sudo).
# Usage: scripts/render-svg.sh FILE.svg [OUT.png]
set -eu
svg=${1:?usage: render-svg.sh FILE.svg [OUT.png]}
out=${2:-${svg%.svg}.png}
run=""
[ "$(id -u)" = 0 ] || run="sudo"
for pair in xmllint:libxml2-utils chromium:chromium; do
    command -v "${pair%%:*}" >/dev/null 2>&1 && continue
    $run apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $run apt-get install -y -qq "${pair#*:}" >/dev/null
done
xmllint --noout "$svg"
abs=$(cd "$(dirname "$svg")" && pwd)/$(basename "$svg")
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=900,560 \
    --screenshot="$out" "file://$abs" >/dev/null 2>&1
test -s "$out"
echo "$out"
