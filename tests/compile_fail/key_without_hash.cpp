// Must not compile: a key type expiring::Hash does not cover, and no hash given.
#include <expiring/expiring.hpp>

struct MyStruct {
  int a;
  bool operator==(const MyStruct& o) const { return a == o.a; }
};

int main() {
  expiring::Store<MyStruct, int> store;
  return static_cast<int>(store.size());
}
