// The include alone: what <expiring/expiring.hpp> costs a unit that uses
// nothing from it.
#include <expiring/expiring.hpp>

int main() { return 0; }
