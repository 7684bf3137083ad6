#!/bin/bash
# HEALTHCHECK: healthy when the server answers `ruok` with `imok` on its client port (clientPort in
# zoo.cfg, else this member's `;port` in its server.N line, else 2181). bash's /dev/tcp: no netcat needed.
cfg="${ZOO_CONF_DIR:-/conf}/zoo.cfg"
port="$(sed -n 's/^[[:space:]]*clientPort[[:space:]]*=[[:space:]]*\([0-9]*\).*/\1/p' "$cfg" 2>/dev/null | tail -n 1)"
if [[ -z "$port" ]]; then
    id="$(cat "${ZOO_DATA_DIR:-/data}/myid" 2>/dev/null)"
    port="$(sed -n "s/^[[:space:]]*server\\.${id}[[:space:]]*=.*;\\([^;]*:\\)\\{0,1\\}\\([0-9][0-9]*\\)[[:space:]]*\$/\\2/p" "$cfg" 2>/dev/null | tail -n 1)"
fi
port="${port:-2181}"
exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
printf ruok >&3
answer="$(timeout 2 cat <&3)"
[[ "$answer" == imok ]]
