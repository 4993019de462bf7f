// expect: 3:27 syntax
// options: --size N=8
void f(int N, double A[N])
