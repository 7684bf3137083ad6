// go-zookeeper v1.0.4 over the client port's TLS, through a TLS dialer (zk.WithDialer), for the
// security suite's group `client` (run.sh):
//
//	gotls HOST:PORT CERT KEY CA PATH SUBJECT
//
// opens a session presenting CERT/KEY and verifying the server against CA (the host must be in
// the server certificate's SANs), creates PATH readable only by x509:SUBJECT, reads it back and
// prints `go ok`. Exit 3 when no session opens within 15 s (a refused handshake), 1 on any other
// failure.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/go-zookeeper/zk"
)

type quiet struct{}

func (quiet) Printf(string, ...interface{}) {}

func main() {
	if len(os.Args) != 7 {
		fmt.Println("usage: gotls HOST:PORT CERT KEY CA PATH SUBJECT")
		os.Exit(2)
	}
	hp, certFile, keyFile, caFile, path, subject := os.Args[1], os.Args[2], os.Args[3], os.Args[4], os.Args[5], os.Args[6]
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		fmt.Println("client certificate:", err)
		os.Exit(1)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		fmt.Println("CA:", err)
		os.Exit(1)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	host, _, _ := net.SplitHostPort(hp)
	config := &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, ServerName: host}
	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, config)
	}
	conn, events, err := zk.Connect([]string{hp}, 10*time.Second, zk.WithDialer(dialer), zk.WithLogger(quiet{}))
	if err != nil {
		fmt.Println("connect:", err)
		os.Exit(1)
	}
	defer conn.Close()
	deadline := time.After(15 * time.Second)
	for connected := false; !connected; {
		select {
		case e := <-events:
			connected = e.State == zk.StateHasSession
		case <-deadline:
			fmt.Println("no session")
			os.Exit(3)
		}
	}
	acl := []zk.ACL{{Perms: zk.PermAll, Scheme: "x509", ID: subject}}
	if _, err := conn.Create(path, []byte("go"), 0, acl); err != nil {
		fmt.Println("create:", err)
		os.Exit(1)
	}
	data, _, err := conn.Get(path)
	if err != nil {
		fmt.Println("get:", err)
		os.Exit(1)
	}
	fmt.Printf("%s ok\n", data)
}
