// expect: 4:10 address-of
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  B[0] = &A[0];
}
