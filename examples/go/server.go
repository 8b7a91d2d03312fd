// A minimal Go net/http server, like the one in the reference report (E5):
// one goroutine per connection, multiplexed by Go's runtime over a few OS
// threads with a shared poller and work stealing. It serves the files of a
// directory (loadlab's embedded docroot, assets/docroot, by default) so that
// a sweep can ask it for the same /500B.html and /20KB.html as every model.
//
//	go build -o server examples/go/server.go
//	./server PORT [DOCROOT]
//
// It listens on 127.0.0.1 only: loadlab's load stays on loopback.
package main

import (
	"fmt"
	"log"
	"net/http"
	"os"
)

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: server PORT [DOCROOT]")
		os.Exit(2)
	}
	root := "assets/docroot"
	if len(os.Args) == 3 {
		root = os.Args[2]
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		fmt.Fprintf(os.Stderr, "server: %s is not a directory\n", root)
		os.Exit(2)
	}
	addr := "127.0.0.1:" + os.Args[1]
	log.Fatal(http.ListenAndServe(addr, http.FileServer(http.Dir(root))))
}
