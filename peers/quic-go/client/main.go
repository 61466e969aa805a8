// Command quicgo-client is quiclab's quic-go HTTP/3 client peer: it downloads one URL, discards
// the body and prints {"bytes","seconds","status"} as JSON so the interop runner can check it.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// result is the one line of JSON the runner parses.
type result struct {
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	Status  int     `json:"status"`
	Error   string  `json:"error,omitempty"`
}

func main() {
	caFile := flag.String("ca", "", "trust this CA certificate (PEM) instead of the system roots")
	insecure := flag.Bool("insecure", false, "do not verify the server certificate")
	keylog := flag.String("keylog", "", "append TLS secrets to this file (NSS key log format)")
	timeout := flag.Duration("timeout", 60*time.Second, "give up after this long")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: quicgo-client [flags] URL")
		os.Exit(2)
	}
	res := fetch(flag.Arg(0), *caFile, *insecure, *keylog, *timeout)
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	if res.Error != "" || res.Status != http.StatusOK {
		os.Exit(1)
	}
}

func fetch(url, caFile string, insecure bool, keylog string, timeout time.Duration) result {
	tlsConf := &tls.Config{InsecureSkipVerify: insecure}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return result{Error: fmt.Sprintf("reading CA: %v", err)}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return result{Error: "no certificate in " + caFile}
		}
		tlsConf.RootCAs = pool
	}
	if keylog != "" {
		f, err := os.OpenFile(keylog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return result{Error: fmt.Sprintf("opening key log: %v", err)}
		}
		defer f.Close()
		tlsConf.KeyLogWriter = f
	}
	tr := &http3.Transport{TLSClientConfig: tlsConf, QUICConfig: &quic.Config{}}
	defer tr.Close()
	client := &http.Client{Transport: tr, Timeout: timeout}

	// Timed from before the handshake to the last body byte: what a user waits for.
	start := time.Now()
	resp, err := client.Get(url)
	if err != nil {
		return result{Seconds: time.Since(start).Seconds(), Error: err.Error()}
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	res := result{Bytes: n, Seconds: time.Since(start).Seconds(), Status: resp.StatusCode}
	if err != nil {
		res.Error = err.Error()
	}
	return res
}
