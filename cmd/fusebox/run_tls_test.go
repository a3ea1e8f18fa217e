package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/fusebox-dev/fusebox/internal/testharness"
)

// testCA makes a CA and a server certificate for 127.0.0.1 signed by it;
// it returns the CA in PEM and the server's TLS certificate.
func testCA(t *testing.T) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fusebox test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestRunKafkaTLS runs `fusebox run` against a kfake broker that speaks
// TLS only: with kafka.tls and the right CA it joins its groups; with a
// CA that did not sign the broker's certificate it refuses to start with
// an error about the certificate.
func TestRunKafkaTLS(t *testing.T) {
	caPEM, cert := testCA(t)
	k := testharness.StartKafka(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))
	dir := t.TempDir()
	caFile := writeFile(t, dir, "ca.pem", string(caPEM))
	cfg := writeFile(t, dir, "tls.yaml", withKafka(runConfig(k.Brokers, "http: {listen: 127.0.0.1:0}\nsigning: {insecure_unsigned: true}\n"),
		"  tls: {enabled: true, ca_file: "+caFile+"}\n"))
	runUntilReady(t, "--config", cfg)

	otherCA, _ := testCA(t)
	bad := writeFile(t, dir, "bad.yaml", withKafka(runConfig(k.Brokers, "http: {listen: 127.0.0.1:0}\nsigning: {insecure_unsigned: true}\n"),
		"  tls: {enabled: true, ca_file: "+writeFile(t, dir, "other.pem", string(otherCA))+"}\n"))
	ctx2, cancel2 := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel2()
	errs := newLogLines()
	if code := run(ctx2, []string{"run", "--config", bad}, new(strings.Builder), errs); code != exitFailure {
		t.Fatalf("exit %d with an untrusted broker certificate; stderr:\n%s", code, errs.String())
	}
	t.Logf("untrusted certificate: %s", errs.String())
	if !strings.Contains(errs.String(), "certificate") {
		t.Errorf("the error does not mention the certificate:\n%s", errs.String())
	}
}
