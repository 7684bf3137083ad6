// What go-zookeeper's TestIntegration_DNSHostProviderReconnect does, outside its harness (which cannot
// start ZooKeeper 3.9.5, see run.sh): connect to a 3-member ensemble, find the member the client is on,
// kill and restart it (RESTART PORT, a script), then Create() at once. Prints the member's mode before the
// kill and Create's error, for leader-restart.sh to count.
//
//	go run ./leader-restart HOST:PORT,HOST:PORT,HOST:PORT RESTART
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: leader-restart HOSTS RESTART")
		os.Exit(2)
	}
	c, _, err := zk.Connect(strings.Split(os.Args[1], ","), time.Second, zk.WithLogInfo(false))
	if err != nil {
		fmt.Println("connect:", err)
		os.Exit(1)
	}
	defer c.Close()
	if err := c.Delete("/gozk-test", -1); err != nil && err != zk.ErrNoNode {
		fmt.Println("delete:", err)
		os.Exit(1)
	}
	srv := c.Server()
	out, err := exec.Command(os.Args[2], srv[strings.LastIndex(srv, ":")+1:]).Output()
	if err != nil {
		fmt.Println("restart:", err)
		os.Exit(1)
	}
	_, err = c.Create("/gozk-test", []byte{1, 2, 3, 4}, 0, zk.WorldACL(zk.PermAll))
	result := "ok"
	if err != nil {
		result = err.Error()
	}
	fmt.Printf("%s\t%s\n", strings.TrimSpace(string(out)), result)
}
