package store

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

func TestCreateAccount(t *testing.T) {
	s, _ := openStore(t)
	before := time.Now().Add(-time.Second)
	a, err := s.CreateAccount("a@example.com", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^acc_[0-9a-f]{16}$`).MatchString(a.ID) {
		t.Errorf("id %q, want acc_ and 16 hex digits", a.ID)
	}
	if a.Email != "a@example.com" || a.Plan != "default" || !a.EmailVerified || a.BonusScreenshots != 0 {
		t.Errorf("account %+v", a)
	}
	if a.CreatedAt.Before(before) || a.CreatedAt.After(time.Now()) || a.CreatedAt.Location() != time.UTC {
		t.Errorf("created_at %v", a.CreatedAt)
	}
	b, err := s.CreateAccount("a@example.com", "default", false)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == b.ID {
		t.Fatal("two accounts share an id")
	}
	if got, err := s.Account(a.ID); err != nil || got != a {
		t.Fatalf("Account = %+v, %v; want %+v", got, err, a)
	}
	if n, err := s.CountAccounts(); n != 2 || err != nil {
		t.Fatalf("CountAccounts = %d, %v", n, err)
	}
}

func TestCreateAccountWithID(t *testing.T) {
	s, _ := openStore(t)
	if n, err := s.CountAccounts(); n != 0 || err != nil {
		t.Fatalf("CountAccounts on a new store = %d, %v", n, err)
	}
	tests := []struct {
		name    string
		id      string
		plan    string
		wantErr error // nil: created; errAny: some error
	}{
		{"default account", "default", "default", nil},
		{"same id again", "default", "default", ErrConflict},
		{"another id", "team-1_x", "pro", nil},
		{"empty id", "", "default", errAny},
		{"slash in id", "a/b", "default", errAny},
		{"too long id", string(make([]byte, 65)), "default", errAny},
		{"empty plan", "noplan", "", errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := s.CreateAccountWithID(tt.id, "x@example.com", tt.plan, true)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatal(err)
			case tt.wantErr == nil:
				if a.ID != tt.id {
					t.Fatalf("id %q, want %q", a.ID, tt.id)
				}
			case err == nil:
				t.Fatalf("created %+v", a)
			case tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
		})
	}
	if n, err := s.CountAccounts(); n != 2 || err != nil {
		t.Fatalf("CountAccounts = %d, %v", n, err)
	}
}

var errAny = errors.New("any error")

func TestUpdateAccount(t *testing.T) {
	s, _ := openStore(t)
	a, err := s.CreateAccount("a@example.com", "default", false)
	if err != nil {
		t.Fatal(err)
	}
	fnErr := errors.New("refused by fn")
	tests := []struct {
		name    string
		id      string
		fn      func(*shotd.Account) error
		want    func(shotd.Account) shotd.Account // the stored account after the call
		wantErr error
	}{
		{"verify email", a.ID, func(x *shotd.Account) error { x.EmailVerified = true; return nil },
			func(x shotd.Account) shotd.Account { x.EmailVerified = true; return x }, nil},
		{"plan and bonus", a.ID, func(x *shotd.Account) error { x.Plan = "pro"; x.BonusScreenshots = 50; return nil },
			func(x shotd.Account) shotd.Account { x.Plan = "pro"; x.BonusScreenshots = 50; return x }, nil},
		{"fn error aborts", a.ID, func(x *shotd.Account) error { x.Plan = "lost"; return fnErr },
			func(x shotd.Account) shotd.Account { return x }, fnErr},
		{"id cannot change", a.ID, func(x *shotd.Account) error { x.ID = "other"; return nil },
			func(x shotd.Account) shotd.Account { return x }, ErrConflict},
		{"created_at cannot change", a.ID, func(x *shotd.Account) error { x.CreatedAt = time.Time{}; return nil },
			func(x shotd.Account) shotd.Account { return x }, ErrConflict},
		{"plan cannot be emptied", a.ID, func(x *shotd.Account) error { x.Plan = ""; return nil },
			func(x shotd.Account) shotd.Account { return x }, errAny},
		{"unknown account", "acc_missing", func(*shotd.Account) error { return nil },
			func(x shotd.Account) shotd.Account { return x }, shotd.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, err := s.Account(a.ID)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.UpdateAccount(tt.id, tt.fn)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatal(err)
			case tt.wantErr != nil && err == nil:
				t.Fatalf("updated: %+v", got)
			case tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			stored, err := s.Account(a.ID)
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.want(before); stored != want {
				t.Fatalf("stored %+v, want %+v", stored, want)
			}
			if tt.wantErr == nil && got != stored {
				t.Fatalf("returned %+v, stored %+v", got, stored)
			}
		})
	}
}

func TestAccountNotFound(t *testing.T) {
	s, _ := openStore(t)
	if _, err := s.Account("acc_nope"); !errors.Is(err, shotd.ErrNotFound) {
		t.Fatalf("error %v, want ErrNotFound", err)
	}
}

func TestAccountsList(t *testing.T) {
	s, _ := openStore(t)
	var ids []string
	for i := 0; i < 5; i++ {
		a, err := s.CreateAccount(fmt.Sprintf("u%d@example.test", i), "default", true)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a.ID)
	}
	sort.Strings(ids)
	cases := []struct {
		name  string
		after string
		limit int
		want  []string
	}{
		{"all", "", 0, ids},
		{"first two", "", 2, ids[:2]},
		{"after the second", ids[1], 2, ids[2:4]},
		{"after the last", ids[4], 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.Accounts(c.after, c.limit)
			if err != nil {
				t.Fatal(err)
			}
			var gotIDs []string
			for _, a := range got {
				gotIDs = append(gotIDs, a.ID)
			}
			if fmt.Sprint(gotIDs) != fmt.Sprint(c.want) {
				t.Fatalf("got %v, want %v", gotIDs, c.want)
			}
		})
	}
}
