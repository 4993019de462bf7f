// expect: 6:1 syntax
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  B[0] = A[0];
  }
}
