# Helpers the perf scripts share: sourced by them (after their `cd` to the
# repository), never run. Loopback only.

# free_port: a port on 127.0.0.1 that nothing listens on now (the kernel's
# pick for a socket bound to port 0, released at once).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_port PORT [SECONDS]: returns once something accepts on
# 127.0.0.1:PORT, or fails after SECONDS (default 5).
wait_port() {
  local tries=$((${2:-5} * 20))
  for _ in $(seq "$tries"); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}
