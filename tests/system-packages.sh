#!/usr/bin/env bash
# Installs the Debian packages some tests need, when they are missing: `make test`
# runs this first, so a fresh machine's `make test` needs nothing done by hand.
#   tesseract-ocr, tesseract-ocr-eng  offline OCR of scanned pages
#   libtasn1-doc                      a real born-digital manual a pinned question is asked of
#   chromium, chromium-driver         the web page's tests drive a real headless browser
set -euo pipefail
packages=()
command -v tesseract >/dev/null || packages+=(tesseract-ocr tesseract-ocr-eng)
[ -f /usr/share/doc/libtasn1-doc/libtasn1.pdf ] || packages+=(libtasn1-doc)
command -v chromium >/dev/null || packages+=(chromium)
command -v chromedriver >/dev/null || packages+=(chromium-driver)
[ ${#packages[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  # The tests that need them fail and name the package; say it once up front too.
  echo "tests need: ${packages[*]} (install them with apt-get, as root)" >&2
  exit 0
fi
echo "installing the Debian packages the tests need: ${packages[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
