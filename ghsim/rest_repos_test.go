package ghsim

import (
	"context"
	"testing"

	"github.com/google/go-github/v89/github"
)

// A repository names its default branch, and a ref resolves to its commit as GitHub's
// "Get a commit" answers it (the sha alone with the sha media type; 422 for no commit).
func TestGetRepoAndCommitSHA(t *testing.T) {
	s := startSim(t, filesSeed(t), Options{})
	ctx := context.Background()
	c := s.client(s.installationToken())
	org := testSeed(t).Org
	repo, _, err := c.Repositories.Get(ctx, org, ".github")
	if err != nil || repo.GetDefaultBranch() != "main" {
		t.Fatalf("repo: %+v %v", repo, err)
	}
	sha, _, err := c.Repositories.GetCommitSHA1(ctx, org, ".github", "main", "")
	if err != nil || len(sha) != 40 {
		t.Fatalf("sha of main: %q %v", sha, err)
	}
	if _, resp, err := c.Repositories.GetCommitSHA1(ctx, org, ".github", "nope", ""); err == nil || resp.StatusCode != 422 {
		t.Fatalf("an unknown ref: %v", err)
	}
	fc, _, _, err := c.Repositories.GetContents(ctx, org, ".github", "ralph-gate.yml", &github.RepositoryContentGetOptions{Ref: sha})
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := fc.GetContent(); text != policyYAML {
		t.Errorf("content at %s: %q", sha, text)
	}
}
