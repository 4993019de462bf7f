// expect: 3:23 pointer
// options: --size N=8
void f(int N, double *A[N], double B[N]) {
  B[0] = 1.0;
}
