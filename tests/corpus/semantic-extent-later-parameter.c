// expect: 3:17 earlier
// options: --size N=8
void f(double A[N], int N) {
  A[0] = 1.0;
}
