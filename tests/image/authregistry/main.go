// Command authregistry is an OCI registry that insists on the Docker token flow, for gcluster's
// image tests: go-containerregistry's in-memory registry behind a bearer-token check, with a
// token service at /token that accepts one user's Basic credentials. It listens on 127.0.0.1
// only and logs "serving on port N" once it accepts connections.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

type tokenService struct {
	user, password string
	mu             sync.Mutex
	issued         map[string]bool
}

func (t *tokenService) serveToken(w http.ResponseWriter, r *http.Request) {
	u, p, ok := r.BasicAuth()
	if !ok || u != t.user || p != t.password {
		log.Printf("token refused (credentials given: %v)", ok)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"errors":[{"code":"UNAUTHORIZED","message":"invalid username or password"}]}`)
		return
	}
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	token := hex.EncodeToString(raw)
	t.mu.Lock()
	t.issued[token] = true
	t.mu.Unlock()
	log.Printf("token issued for service=%s scopes=%s", r.URL.Query().Get("service"),
		strings.Join(r.URL.Query()["scope"], " "))
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"token": token})
}

func (t *tokenService) valid(header string) bool {
	token, ok := strings.CutPrefix(header, "Bearer ")
	t.mu.Lock()
	defer t.mu.Unlock()
	return ok && t.issued[token]
}

// repository is the <name> of /v2/<name>/(manifests|blobs|tags)/...
func repository(path string) string {
	rest := strings.TrimPrefix(path, "/v2/")
	for _, kind := range []string{"/manifests/", "/blobs/", "/tags/"} {
		if i := strings.Index(rest, kind); i >= 0 {
			return rest[:i]
		}
	}
	return ""
}

func main() {
	port := flag.Int("port", 0, "port to listen on (0: any free port)")
	user := flag.String("user", "gcluster", "the user the token service accepts")
	password := flag.String("password", "", "that user's password")
	flag.Parse()

	listener, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		log.Fatal(err)
	}
	realm := fmt.Sprintf("http://%s/token", listener.Addr())
	tokens := &tokenService{user: *user, password: *password, issued: map[string]bool{}}
	backend := registry.New()

	mux := http.NewServeMux()
	mux.HandleFunc("/token", tokens.serveToken)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if tokens.valid(r.Header.Get("Authorization")) {
			backend.ServeHTTP(w, r)
			return
		}
		challenge := fmt.Sprintf(`Bearer realm=%q,service="authregistry"`, realm)
		if repo := repository(r.URL.Path); repo != "" {
			challenge += fmt.Sprintf(`,scope="repository:%s:pull,push"`, repo)
		}
		w.Header().Set("WWW-Authenticate", challenge)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
	})

	log.Printf("serving on port %d", listener.Addr().(*net.TCPAddr).Port)
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Fatal(server.Serve(listener))
}
