package payload

import (
	"errors"
	"os"
	"reflect"
	"testing"
)

func TestPush(t *testing.T) {
	data, err := os.ReadFile("testdata/SYNTHESIZED_push.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Push(data)
	want := PushEvent{Owner: "acme", Repo: ".github", Ref: "refs/heads/main", DefaultBranch: "main",
		After: "2222222222222222222222222222222222222222", Sender: "alice", SenderType: "User", InstallationID: 7, Private: true, Files: []string{"ralph-gate.yml", "old.yml"}, Commits: 1}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Push = %+v, %v; want %+v", got, err, want)
	}
	if got.Branch() != "main" {
		t.Errorf("Branch() = %q", got.Branch())
	}
	for _, bad := range []string{`[]`, `{}`, `{"ref":"refs/heads/main"}`, `{"ref":"refs/heads/main","repository":{"name":"x"}}`} {
		if _, err := Push([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("Push(%s): %v, want ErrMalformed", bad, err)
		}
	}
	if b := (PushEvent{Ref: "refs/tags/v1"}).Branch(); b != "" {
		t.Errorf("a tag's branch: %q", b)
	}
}

func TestInstallation(t *testing.T) {
	data, err := os.ReadFile("testdata/SYNTHESIZED_installation_created.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Installation(data)
	want := InstallationEvent{Action: "created", InstallationID: 8, Account: "globex", Sender: "gina"}
	if err != nil || got != want {
		t.Fatalf("Installation = %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{`7`, `{}`, `{"action":"created","installation":{"id":8}}`} {
		if _, err := Installation([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("Installation(%s): %v, want ErrMalformed", bad, err)
		}
	}
}

func FuzzPush(f *testing.F) {
	seedPayloads(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := Push(data)
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v is not ErrMalformed", err)
		}
		if err == nil && (ev.Owner == "" || ev.Repo == "") {
			t.Fatalf("decoded a push without its repository: %+v", ev)
		}
	})
}

func FuzzInstallation(f *testing.F) {
	seedPayloads(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := Installation(data)
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v is not ErrMalformed", err)
		}
		if err == nil && (ev.InstallationID == 0 || ev.Account == "") {
			t.Fatalf("decoded an installation event without its account: %+v", ev)
		}
	})
}
