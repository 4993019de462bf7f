// expect: 4:3 pointer
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  *B = A[0];
}
