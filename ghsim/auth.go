package ghsim

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

type principalKind int

const (
	anonymous principalKind = iota
	appJWT
	installationToken
	userToken
)

func (k principalKind) String() string {
	return [...]string{"anonymous", "app", "installation", "user"}[k]
}

// principal is who made a request: the app (JWT), its installation (token, acting as <slug>[bot])
// or a seeded user.
type principal struct {
	kind  principalKind
	actor *actor        // nil for anonymous and app
	inst  *installation // the installation of an installation token
	key   string        // rate-limit and request-log identity, stable across token refreshes
}

func (p principal) owner() string {
	switch p.kind {
	case appJWT:
		return "app"
	case anonymous:
		return ""
	}
	return p.actor.login
}

// authenticator verifies app JWTs and issues and checks installation tokens.
type authenticator struct {
	pub   *rsa.PublicKey
	appID int64
	seed  uint64
	now   func() time.Time

	mu     sync.Mutex
	n      uint64
	tokens map[string]issuedToken
}

// issuedToken is an installation token: its installation (id and the install it was issued
// in) and expiry.
type issuedToken struct {
	installationID int64
	epoch          int
	expires        time.Time
}

const installationTokenTTL = time.Hour

var (
	errBadCredentials = errors.New("Bad credentials")
	errJWTDecode      = errors.New("A JSON web token could not be decoded")
	errJWTExpired     = errors.New("'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires")
	errJWTTooLong     = errors.New("'Expiration time' claim ('exp') is too far in the future")
	errJWTIssuer      = errors.New("'Issuer' claim ('iss') must be an Integer")
)

// bearer returns the credential of an Authorization header ("Bearer x", "bearer x" or "token x").
func bearer(h string) string {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok {
		return ""
	}
	switch strings.ToLower(scheme) {
	case "bearer", "token":
		return strings.TrimSpace(cred)
	}
	return ""
}

func isJWT(cred string) bool { return strings.Count(cred, ".") == 2 }

// verifyJWT checks an RS256 app JWT as GitHub does: signature by the app key, iss = app id,
// exp in the future and at most ten minutes (plus a minute of clock drift) ahead.
func (a *authenticator) verifyJWT(tok string) error {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return errJWTDecode
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	pb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return errJWTDecode
	}
	var hdr struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(hb, &hdr) != nil || hdr.Alg != "RS256" {
		return errJWTDecode
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(a.pub, crypto.SHA256, digest[:], sig) != nil {
		return errJWTDecode
	}
	var claims struct {
		Iss json.RawMessage `json:"iss"`
		Exp json.Number     `json:"exp"`
		Iat json.Number     `json:"iat"`
	}
	if json.Unmarshal(pb, &claims) != nil {
		return errJWTDecode
	}
	iss := strings.Trim(string(claims.Iss), `"`)
	if id, err := strconv.ParseInt(iss, 10, 64); err != nil || id != a.appID {
		return errJWTIssuer
	}
	exp, err := claims.Exp.Int64()
	if err != nil {
		return errJWTExpired
	}
	now := a.now().Unix()
	if exp <= now {
		return errJWTExpired
	}
	if exp > now+11*60 {
		return errJWTTooLong
	}
	return nil
}

// issue creates a token of an installation, valid for an hour.
func (a *authenticator) issue(inst *installation) (string, time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	var in [17]byte
	binary.BigEndian.PutUint64(in[:8], a.seed)
	binary.BigEndian.PutUint64(in[8:16], a.n)
	in[16] = 't'
	h := sha256.Sum256(in[:])
	tok := "ghs_" + hex.EncodeToString(h[:])[:36]
	exp := a.now().Add(installationTokenTTL).UTC().Truncate(time.Second)
	a.tokens[tok] = issuedToken{installationID: inst.id, epoch: inst.epoch, expires: exp}
	return tok, exp
}

func (a *authenticator) installationToken(tok string) (issuedToken, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.tokens[tok]
	return t, ok
}

// identify resolves the Authorization header. Callers hold the world's read lock.
func (a *authenticator) identify(w *world, header string) (principal, error) {
	if header == "" {
		return principal{kind: anonymous, key: "anonymous"}, nil
	}
	cred := bearer(header)
	if cred == "" {
		return principal{}, errBadCredentials
	}
	if isJWT(cred) {
		if err := a.verifyJWT(cred); err != nil {
			return principal{}, err
		}
		return principal{kind: appJWT, key: fmt.Sprintf("app:%d", a.appID)}, nil
	}
	if t, known := a.installationToken(cred); known {
		// Expired, or its installation deleted (and maybe installed again since): refused.
		in := w.installation(t.installationID)
		if !a.now().Before(t.expires) || in == nil || !in.installed || in.epoch != t.epoch {
			return principal{}, errBadCredentials
		}
		return principal{kind: installationToken, actor: w.app.bot, inst: in, key: fmt.Sprintf("installation:%d", in.id)}, nil
	}
	if u := w.byToken[cred]; u != nil {
		return principal{kind: userToken, actor: u, key: "user:" + u.login}, nil
	}
	return principal{}, errBadCredentials
}
