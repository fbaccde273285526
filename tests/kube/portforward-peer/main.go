// portforward-peer: the server side of a pod port-forward, made of the real Kubernetes code, for
// gcluster's unit tests of its port-forward client. On 127.0.0.1 it runs
//
//   - a "kubelet": the kubelet's port-forward server (k8s.io/cri-streaming), which speaks SPDY
//     after an HTTP upgrade, forwarding port 29000 to an in-process echo and refusing others;
//   - an "API server": the kube-apiserver's pods/portforward handler chain (k8s.io/apiserver's
//     TunnelingHandler in front of k8s.io/apimachinery's UpgradeAwareHandler), which takes either
//     a WebSocket carrying SPDY ("SPDY/3.1+portforward.k8s.io") or a direct SPDY upgrade and
//     proxies it to the kubelet.
//
// Only pod p-0 in namespace ns exists. It prints the API server's address on one line, serves
// until its stdin closes, then exits.
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	"k8s.io/apimachinery/pkg/util/proxy"
	apiproxy "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
)

// echo answers port 29000 with the bytes it reads, until the client half-closes; then it
// returns, and the kubelet code ends both streams. Other ports fail like an unreachable port.
type echo struct{}

func (echo) PortForward(ctx context.Context, name, uid string, port int32, stream io.ReadWriteCloser) error {
	if port != 29000 {
		return fmt.Errorf("dial tcp 127.0.0.1:%d: connect: connection refused", port)
	}
	_, err := io.Copy(stream, stream)
	return err
}

type responder struct{}

func (responder) Error(w http.ResponseWriter, req *http.Request, err error) {
	http.Error(w, err.Error(), http.StatusBadGateway)
}

func listen() net.Listener {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "portforward-peer:", err)
		os.Exit(1)
	}
	return l
}

func main() {
	kubelet := listen()
	go http.Serve(kubelet, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		opts, err := portforward.NewV4Options(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		portforward.ServePortForward(w, r, echo{}, "p-0", "uid", opts, time.Minute, 30*time.Second,
			portforward.SupportedProtocols)
	}))

	location := &url.URL{Scheme: "http", Host: kubelet.Addr().String(), Path: "/portForward/ns/p-0"}
	upgrade := proxy.NewUpgradeAwareHandler(location, http.DefaultTransport, false, true, responder{})
	handler := apiproxy.NewTranslatingHandler(upgrade, apiproxy.NewTunnelingHandler(upgrade),
		wsstream.IsWebSocketRequestWithTunnelingProtocol)

	// Only pod p-0 of namespace ns exists; anything else is answered as the API server would.
	mux := http.NewServeMux()
	mux.Handle("/api/v1/namespaces/ns/pods/p-0/portforward", handler)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure",`+
			`"message":"pods not found","reason":"NotFound","code":404}`)
	})
	api := listen()
	go http.Serve(api, mux)
	fmt.Println(api.Addr().String())

	io.Copy(io.Discard, bufio.NewReader(os.Stdin))
}
