# The shell (efb-cli) finds efbd's socket where the package's efbd.service puts it.
# Change both this and management.socket in /etc/efb/efbd.toml to move it.
: "${EFB_CONNECT:=/run/efb/efbd.sock}"
export EFB_CONNECT
