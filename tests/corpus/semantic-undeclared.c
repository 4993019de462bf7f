// expect: 4:10 undeclared
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  B[0] = C[0];
}
