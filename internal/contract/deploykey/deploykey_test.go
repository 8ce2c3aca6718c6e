package deploykey

import (
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

func TestGenerate(t *testing.T) {
	k, err := Generate("flux-mgmt-a", nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(k.PrivatePEM)
	if err != nil {
		t.Fatal(err)
	}
	pub := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	if k.Public != pub+" flux-mgmt-a" || signer.PublicKey().Type() != ssh.KeyAlgoED25519 {
		t.Errorf("public %q does not match private key %q", k.Public, pub)
	}
	s := k.Secret("flux-system", "flux-system", []byte("kh"))
	for _, key := range []string{"identity", "identity.pub", "known_hosts"} {
		if len(s.Data[key]) == 0 {
			t.Errorf("Secret lacks %s", key)
		}
	}
	other, _ := Generate("x", nil)
	if string(other.PrivatePEM) == string(k.PrivatePEM) {
		t.Error("two keys are equal")
	}
}

func TestCheckKnownHosts(t *testing.T) {
	const line = "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
	tests := []struct {
		in      string
		wantErr bool
	}{
		{line + "\n", false},
		{"# comment\n" + line + "\n" + line + "\n", false},
		{"", true},
		{"# only a comment\n", true},
		{"github.com ssh-ed25519 notbase64\n", true},
	}
	for _, tt := range tests {
		if err := CheckKnownHosts([]byte(tt.in)); (err != nil) != tt.wantErr {
			t.Errorf("CheckKnownHosts(%q) = %v, wantErr %v", tt.in, err, tt.wantErr)
		}
	}
}
