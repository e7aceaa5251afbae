package objstore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/shotd/shotd"
)

// KeyFile is the file in data_dir that holds the key sealing the storage credentials of queued
// jobs. Losing it loses only those credentials: their jobs fail with storage_failed.
const KeyFile = "storage.key"

// Sealer encrypts the storage credentials a job keeps in its record (AES-256-GCM), so that the
// database alone, or a copy of it, never shows them.
type Sealer struct{ aead cipher.AEAD }

// OpenSealer reads the key in dataDir, creating it (0600) at first use.
func OpenSealer(dataDir string) (*Sealer, error) {
	path := filepath.Join(dataDir, KeyFile)
	b, err := os.ReadFile(path)
	var key []byte
	switch {
	case err == nil:
		key, err = hex.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(key) != 32 {
			return nil, fmt.Errorf("objstore: %s is not a 32-byte hex key", path)
		}
	case errors.Is(err, os.ErrNotExist):
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		// O_EXCL: two services on one data_dir must not each write a key of their own.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			if errors.Is(err, os.ErrExist) {
				return OpenSealer(dataDir)
			}
			return nil, fmt.Errorf("objstore: write %s: %w", path, err)
		}
		_, err = f.WriteString(hex.EncodeToString(key) + "\n")
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("objstore: write %s: %w", path, err)
		}
	default:
		return nil, fmt.Errorf("objstore: read %s: %w", path, err)
	}
	return NewSealer(key)
}

// NewSealer seals with a 32-byte key.
func NewSealer(key []byte) (*Sealer, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("objstore: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// sealed is what is encrypted; plain strings, since shotd.Secret marshals as [redacted].
type sealed struct {
	ID     string `json:"i"`
	Secret string `json:"s"`
}

// Seal encrypts c: a random nonce, then the ciphertext.
func (s *Sealer) Seal(c shotd.StorageCredentials) ([]byte, error) {
	return s.seal(sealed{ID: c.AccessKeyID.Reveal(), Secret: c.SecretAccessKey.Reveal()})
}

// Open decrypts what Seal made. Another key, or an altered record, is an error.
func (s *Sealer) Open(b []byte) (shotd.StorageCredentials, error) {
	v, err := s.open(b)
	if err != nil {
		return shotd.StorageCredentials{}, err
	}
	return shotd.StorageCredentials{AccessKeyID: shotd.Secret(v.ID), SecretAccessKey: shotd.Secret(v.Secret)}, nil
}

func (s *Sealer) seal(v sealed) ([]byte, error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, plain, nil), nil
}

func (s *Sealer) open(b []byte) (sealed, error) {
	var v sealed
	n := s.aead.NonceSize()
	if len(b) < n {
		return v, errors.New("objstore: sealed credentials too short")
	}
	plain, err := s.aead.Open(nil, b[:n], b[n:], nil)
	if err != nil {
		return v, fmt.Errorf("objstore: sealed credentials: %w", err)
	}
	err = json.Unmarshal(plain, &v)
	return v, err
}

// SealOptions returns a copy of o whose credentials are sealed (into Storage.Sealed and the
// proxy's Sealed), ready for a job record; o itself is immutable and left alone.
func (s *Sealer) SealOptions(o *shotd.Options) (*shotd.Options, error) {
	c := *o
	if o.Store {
		b, err := s.Seal(o.Storage.Credentials)
		if err != nil {
			return nil, err
		}
		c.Storage.Sealed, c.Storage.Credentials = b, shotd.StorageCredentials{}
	}
	if p := o.S1.Proxy; p != nil && p.HasCredentials() {
		b, err := s.seal(sealed{ID: p.Username.Reveal(), Secret: p.Password.Reveal()})
		if err != nil {
			return nil, err
		}
		sp := *p
		sp.Sealed, sp.Username, sp.Password = b, "", ""
		c.S1.Proxy = &sp
	}
	if err := s.sealRequest(&c); err != nil {
		return nil, err
	}
	return &c, nil
}

// OpenOptions restores in o the credentials SealOptions sealed. A job whose credentials cannot
// be read (data_dir's key changed) fails, saying so: storage_failed for the storage's,
// internal_error for the proxy's.
func (s *Sealer) OpenOptions(o *shotd.Options) error {
	if o.Store {
		c, err := s.Open(o.Storage.Sealed)
		if err != nil {
			return shotd.Wrap(shotd.CodeStorageFailed, err, "the storage credentials of this job could not be read (the service's key changed); send the request again")
		}
		o.Storage.Credentials, o.Storage.Sealed = c, nil
	}
	if p := o.S1.Proxy; p != nil && p.Sealed != nil {
		v, err := s.open(p.Sealed)
		if err != nil {
			return shotd.Wrap(shotd.CodeInternalError, err, "the proxy credentials of this job could not be read (the service's key changed); send the request again")
		}
		op := *p
		op.Username, op.Password, op.Sealed = shotd.Secret(v.ID), shotd.Secret(v.Secret), nil
		o.S1.Proxy = &op
	}
	return s.openRequest(o)
}
