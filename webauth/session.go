package webauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
)

// Cookie names. With https the session cookie takes the __Host- prefix, which browsers accept
// only when Secure, for Path=/ and without Domain: no subdomain can set or shadow it.
const (
	sessionCookie       = "ralph_gate_session"
	secureSessionCookie = "__Host-ralph_gate_session"
	stateCookie         = "ralph_gate_oauth_state"
)

// session is what the signed cookie holds: who signed in, when it ends, and a random id the
// CSRF token is derived from. Never a GitHub token.
type session struct {
	Login   string `json:"l"`
	UserID  int64  `json:"u"`
	ID      string `json:"s"`
	Expires int64  `json:"e"` // Unix seconds
}

// pending is the state cookie of a sign-in under way: the OAuth state and where to go after.
type pending struct {
	State   string `json:"s"`
	Next    string `json:"n"`
	Expires int64  `json:"e"`
}

// signer signs and checks cookie values: base64url(JSON) "." base64url(HMAC-SHA256). Each
// purpose has its own key derived from the session key, so a state cookie cannot pass for a
// session, nor a session id for a CSRF token.
type signer struct {
	session, state, csrf []byte
}

func newSigner(key []byte) signer {
	derive := func(purpose string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte("ralph-gate webauth v1 " + purpose))
		return m.Sum(nil)
	}
	return signer{session: derive("session"), state: derive("oauth state"), csrf: derive("csrf")}
}

var errBadCookie = errors.New("webauth: cookie not signed by this key")

func mac(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func seal(key []byte, v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	body := base64.RawURLEncoding.EncodeToString(b)
	return body + "." + base64.RawURLEncoding.EncodeToString(mac(key, body)), nil
}

func unseal(key []byte, value string, v any) error {
	body, sig, ok := strings.Cut(value, ".")
	if !ok {
		return errBadCookie
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac(key, body)) {
		return errBadCookie
	}
	b, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return errBadCookie
	}
	return json.Unmarshal(b, v)
}

// csrfToken is the logout form's token: a MAC of the session id, so it changes with every
// sign-in and cannot be computed without the key.
func (s signer) csrfToken(sess session) string {
	return base64.RawURLEncoding.EncodeToString(mac(s.csrf, sess.ID))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// cookies writes and reads the two cookies with the attributes the public URL calls for.
type cookies struct {
	signer signer
	secure bool
	ttl    time.Duration
	now    func() time.Time
}

func (c cookies) sessionName() string {
	if c.secure {
		return secureSessionCookie
	}
	return sessionCookie
}

func (c cookies) set(w http.ResponseWriter, name, value, path string, maxAge time.Duration) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: path, MaxAge: int(maxAge.Seconds()),
		Expires: c.now().Add(maxAge), HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteLaxMode})
}

func (c cookies) clear(w http.ResponseWriter, name, path string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: path, MaxAge: -1, Expires: time.Unix(1, 0),
		HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteLaxMode})
}

// startSession signs a new session in.
func (c cookies) startSession(w http.ResponseWriter, login string, userID int64) error {
	v, err := seal(c.signer.session, session{Login: login, UserID: userID, ID: randomHex(16), Expires: c.now().Add(c.ttl).Unix()})
	if err != nil {
		return err
	}
	c.set(w, c.sessionName(), v, "/", c.ttl)
	return nil
}

// session reads a valid, unexpired session (ok false for none, a bad signature or an expired one).
func (c cookies) session(r *http.Request) (session, bool) {
	ck, err := r.Cookie(c.sessionName())
	if err != nil {
		return session{}, false
	}
	var s session
	if unseal(c.signer.session, ck.Value, &s) != nil || s.Login == "" || s.ID == "" || c.now().Unix() >= s.Expires {
		return session{}, false
	}
	return s, true
}
