# Sourced by .ci/run and scripts/emulated-test: apt_install PACKAGE...
# installs Debian packages where there is apt-get, updating the package
# lists first (a fresh image may have empty ones), as root or through sudo.
# Where there is no apt-get it does nothing and succeeds: each caller then
# finds out whether what it needed is there, and says so.
apt_install() {
  command -v apt-get >/dev/null 2>&1 || return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q && $sudo apt-get install -y -q "$@"
}
