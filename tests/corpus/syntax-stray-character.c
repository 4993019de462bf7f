// expect: 4:15 syntax
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  B[0] = A[0] @ 2;
}
