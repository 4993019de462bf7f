// expect: 4:10 pointer
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  double *p;
  B[0] = A[0];
}
